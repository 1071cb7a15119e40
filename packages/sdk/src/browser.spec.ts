import { spawnSync } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import vm from 'node:vm';

const root = path.resolve(__dirname, '../../..');

/**
 * Bundles an entry of the SDK as a bundler does for a web page: rolldown (the bundler of Vite, which
 * builds apps/web) with `platform: 'browser'`, dependencies bundled in. Run in a child process: the
 * bundler is an ES module. `format` esm for the import check, iife to run the bundle below.
 */
function bundle(entry: string, format: 'esm' | 'iife'): { code: string; imports: string[]; dynamicImports: string[]; warnings: string[] } {
  const script = `
    import { build } from 'rolldown';
    const warnings = [];
    const result = await build({
      input: ${JSON.stringify(entry)},
      platform: 'browser',
      write: false,
      onLog: (level, log) => warnings.push(log.code + ': ' + log.message.replace(/\\x1b\\[[0-9;]*m/g, '').split('\\n')[0]),
      output: { format: ${JSON.stringify(format)}, name: 'KbSdk' },
    });
    const chunk = result.output[0];
    process.stdout.write(JSON.stringify({ code: chunk.code, imports: chunk.imports, dynamicImports: chunk.dynamicImports, warnings }));
  `;
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: root, encoding: 'utf8', maxBuffer: 64 << 20 });
  if (run.status !== 0) throw new Error(`rolldown failed: ${run.stderr}`);
  return JSON.parse(run.stdout);
}

/** An import of a Node built-in in emitted code: `from "node:…"`, `import("node:…")`, `require("node:…")` (comments aside). */
const NODE_IMPORT =
  /(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*)["'](?:node:|(?:fs|http|https|path|crypto|stream|buffer|net|os|url|util)(?:\/[\w/]*)?["'])/;

describe('the browser entry (src/browser.ts)', () => {
  it('bundles for platform browser with no Node built-in imported or required', () => {
    const esm = bundle('packages/sdk/src/browser.ts', 'esm');
    expect(esm.warnings).toEqual([]);
    expect(esm.imports).toEqual([]);
    expect(esm.dynamicImports).toEqual([]);
    expect(esm.code).not.toMatch(NODE_IMPORT);
    expect(esm.code).toMatch(/export \{[^}]*\buploadBlobs\b/);
    expect(esm.code).toMatch(/export \{[^}]*\bPagedList\b/);
    // The check sees Node imports where there are some: the Node entry's uploads from paths.
    const node = bundle('packages/sdk/src/index.ts', 'esm');
    expect(node.imports).toEqual(expect.arrayContaining(['node:fs', 'node:http', 'node:path']));
    expect(node.code).toMatch(NODE_IMPORT);
  });

  it('runs with only the globals of a browser (no process, Buffer or require): requests, typed errors, upload input checks', async () => {
    const { code } = bundle('packages/sdk/src/browser.ts', 'iife');
    const server = http.createServer((req, res) => {
      const known = req.url === '/api/v2/organization' && req.headers.authorization === 'Bearer kb_browser';
      res.writeHead(known ? 200 : 404, { 'Content-Type': 'application/json', 'X-Request-Id': 'req-1' });
      res.end(
        JSON.stringify(
          known
            ? { success: true, data: { id: 'org-1', name: 'Org' } }
            : { success: false, error: { code: 'NOT_FOUND', message: 'No such route.' }, request_id: 'req-1' },
        ),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const web = {
        fetch,
        Request,
        Response,
        Headers,
        URL,
        URLSearchParams,
        AbortController,
        AbortSignal,
        Blob,
        File,
        FormData,
        ReadableStream,
        TextEncoder,
        TextDecoder,
        DOMException,
        crypto,
        setTimeout,
        clearTimeout,
        console,
      };
      const context = vm.createContext({ ...web });
      const sdk = vm.runInContext(`${code}\nKbSdk`, context) as typeof import('./browser');
      expect(vm.runInContext('typeof process + typeof Buffer + typeof require', context)).toBe('undefinedundefinedundefined');
      expect(() => new sdk.KbClient()).toThrow(/No API key/);
      const kb = new sdk.KbClient({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, apiKey: 'kb_browser' });
      expect(await kb.data(kb.api.GET('/api/v2/organization'))).toEqual({ id: 'org-1', name: 'Org' });
      // The resource namespaces are on the browser entry's client too.
      expect(await kb.organization.get()).toEqual({ id: 'org-1', name: 'Org' });
      await expect(kb.projects.get('00000000-0000-4000-8000-000000000000')).rejects.toBeInstanceOf(sdk.KbNotFoundError);
      expect(typeof kb.runs.list().firstPage).toBe('function');
      const missing = await kb
        .data(kb.api.GET('/api/v2/projects/{id}', { params: { path: { id: '00000000-0000-4000-8000-000000000000' } } }))
        .catch((e: unknown) => e);
      expect(missing).toBeInstanceOf(sdk.KbNotFoundError);
      expect(missing).toBeInstanceOf(sdk.KbApiError);
      expect(missing).toMatchObject({ status: 404, code: 'NOT_FOUND', requestId: 'req-1' });
      await expect(sdk.uploadBlobs(kb, [new Blob(['x']) as File])).rejects.toThrow(/a file name is needed/);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

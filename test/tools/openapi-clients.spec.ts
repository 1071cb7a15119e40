// The committed OpenAPI document (openapi/openapi.json, kept equal to what the code builds by
// apps/gateway/src/reference.spec.ts) used by two client generators, as people building on the
// service would: openapi-typescript (the SDK's) and openapi-python-client (PyPI, a second
// generator: tools/lib/openapi-python-client.mjs). Each generated client must compile in strict
// mode (tsc --strict, mypy --strict) with no request or response body typed `unknown` / `Any`.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

jest.setTimeout(180_000);

const ROOT = path.resolve(__dirname, '../..');
const DOCUMENT = path.join(ROOT, 'openapi/openapi.json');
const METHODS = ['get', 'put', 'post', 'patch', 'delete'];

type Json = Record<string, any>;
const doc: Json = JSON.parse(readFileSync(DOCUMENT, 'utf8'));

/** Every body of the document: `[label, TypeScript type expression of the openapi-typescript output]`. */
function bodies(): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  const q = (s: string) => JSON.stringify(s);
  for (const [p, item] of Object.entries(doc.paths as Json)) {
    for (const m of METHODS.filter((x) => item[x])) {
      const op = item[m];
      const base = `paths[${q(p)}][${q(m)}]`;
      for (const ct of Object.keys(op.requestBody?.content ?? {}))
        out.push([`${m.toUpperCase()} ${p} request ${ct}`, `NonNullable<${base}['requestBody']>['content'][${q(ct)}]`]);
      for (const [status, r] of Object.entries(op.responses as Json)) {
        for (const ct of Object.keys(r.content ?? {}))
          out.push([`${m.toUpperCase()} ${p} ${status} ${ct}`, `${base}['responses'][${q(status)}]['content'][${q(ct)}]`]);
      }
    }
  }
  for (const type of Object.keys(doc.webhooks as Json))
    out.push([`webhook ${type}`, `webhooks[${q(type)}]['post']['requestBody']['content']['application/json']`]);
  return out;
}

function pythonTools(): { bin?: string; reason?: string } {
  const r = spawnSync(process.execPath, [path.join(ROOT, 'tools/lib/openapi-python-client.mjs'), 'ensure'], { encoding: 'utf8' });
  if (r.status === 0) return { bin: r.stdout.trim() };
  // PyPI unreachable (exit 2): skipped with the reason, as the schemathesis test does; any other failure fails.
  if (r.status === 2) return { reason: r.stderr.trim() };
  throw new Error(`openapi-python-client could not be installed:\n${r.stderr}`);
}

describe('clients generated from the committed OpenAPI document', () => {
  it('openapi-typescript: compiles with tsc --strict, and no request, response or webhook body is unknown or any', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'kb-openapi-ts-'));
    execFileSync(path.join(ROOT, 'node_modules/.bin/openapi-typescript'), [DOCUMENT, '-o', path.join(dir, 'openapi.ts')], { stdio: 'pipe' });
    const checks = bodies();
    expect(checks.length).toBeGreaterThan(100);
    // One line per body: a type error on line N names checks[N - HEADER] as typed unknown/any.
    const header = [
      "import type { paths, webhooks } from './openapi';",
      '/** true when T is unknown or any (both accept unknown). */',
      'type Hole<T> = unknown extends T ? true : false;',
      'type Typed<T extends false> = T;',
    ];
    const lines = checks.map(([, t], i) => `export type B${i} = Typed<Hole<${t}>>;`);
    writeFileSync(path.join(dir, 'check.ts'), [...header, ...lines, ''].join('\n'));
    const tsc = spawnSync(
      process.execPath,
      [
        path.join(ROOT, 'node_modules/typescript/bin/tsc'),
        '--strict',
        '--noEmit',
        '--target',
        'es2022',
        '--module',
        'nodenext',
        '--moduleResolution',
        'nodenext',
        path.join(dir, 'check.ts'),
      ],
      {
        cwd: dir,
        encoding: 'utf8',
      },
    );
    const errors = (tsc.stdout + tsc.stderr).split('\n').filter((l) => /error TS/.test(l));
    const named = errors.map((l) => {
      const line = Number(/check\.ts\((\d+),/.exec(l)?.[1] ?? 0);
      return line > header.length ? `${checks[line - header.length - 1][0]}: unknown or any` : l;
    });
    expect(named).toEqual([]);
  });

  const tools = pythonTools();
  (tools.bin ? it : it.skip)(
    `openapi-python-client: generates without warnings, passes mypy --strict, and types every body${tools.reason ? ` (skipped: ${tools.reason})` : ''}`,
    () => {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'kb-openapi-py-'));
      const config = path.join(dir, 'config.yaml');
      // No post hooks: the default runs ruff, which is not needed to check the types.
      writeFileSync(config, 'post_hooks: []\n');
      const gen = spawnSync(
        path.join(tools.bin!, 'openapi-python-client'),
        ['generate', '--path', DOCUMENT, '--output-path', path.join(dir, 'kb_client'), '--meta', 'none', '--config', config],
        { encoding: 'utf8' },
      );
      const said = `${gen.stdout}${gen.stderr}`;
      expect([gen.status, said.replace(/^Generating .*$/m, '').trim()]).toEqual([0, '']);
      const mypy = spawnSync(path.join(tools.bin!, 'mypy'), ['--strict', '--no-incremental', 'kb_client'], { cwd: dir, encoding: 'utf8' });
      expect([mypy.status, mypy.stdout.trim().split('\n').pop()]).toEqual([0, expect.stringMatching(/^Success: no issues found/)]);
      // Bodies: no `body: Any` parameter; `Any` as a parsed answer only for the operations answering 204 (no body).
      const noContent = new Set<string>();
      for (const item of Object.values(doc.paths as Json)) {
        for (const m of METHODS.filter((x) => item[x]))
          if (item[m].responses['204']) noContent.add(item[m].operationId.replace(/[A-Z]/g, (c: string) => `_${c.toLowerCase()}`));
      }
      const api = path.join(dir, 'kb_client/api');
      const holes: string[] = [];
      let operations = 0;
      for (const tag of readdirSync(api).filter((t) => !t.includes('.'))) {
        for (const file of readdirSync(path.join(api, tag)).filter((f) => f.endsWith('.py') && f !== '__init__.py')) {
          operations++;
          const text = readFileSync(path.join(api, tag, file), 'utf8');
          const name = file.replace(/\.py$/, '');
          if (/\bbody: Any\b/.test(text)) holes.push(`${name}: request body Any`);
          const parsed = /def _parse_response\([^)]*\) -> ([^:]+):/.exec(text)?.[1] ?? '';
          if (/\bAny\b/.test(parsed) && !noContent.has(name)) holes.push(`${name}: response ${parsed}`);
        }
      }
      expect(operations).toBe(Object.values(doc.paths as Json).flatMap((item) => METHODS.filter((x) => item[x])).length);
      expect(holes).toEqual([]);
      // The webhook payloads are models too: `data` typed by the resource.
      const event = readFileSync(path.join(dir, 'kb_client/models/document_ready_event.py'), 'utf8');
      expect(event).toMatch(/\bdata: DocumentView\b/);
    },
  );
});

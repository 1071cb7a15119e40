// tools/fetch-model.mjs (what `npm start` and the Dockerfile's model stage run), run for real as a
// child process against a local model-hub mirror (HF_ENDPOINT) that serves the real model files of
// ../shared/models with the hub's `/<model>/resolve/<revision>/<file>` URLs. The real hub cannot be
// reached from the test machines; transformers.js' download path is the same for both.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import http from 'node:http';
import { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';

jest.setTimeout(120_000);

const ROOT = path.resolve(__dirname, '../..');
const SOURCE = path.resolve(ROOT, '../shared/models/all-MiniLM-L6-v2');
const MODEL = 'Xenova/all-MiniLM-L6-v2';

interface Mirror {
  url: string;
  requests: string[];
  close(): Promise<void>;
}

/** A hub mirror: `/Xenova/all-MiniLM-L6-v2/resolve/main/<file>` → the shared copy; `broken` files answer 500. */
async function startMirror(broken: string[] = []): Promise<Mirror> {
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    const prefix = `/${MODEL}/resolve/main/`;
    const file = req.url?.startsWith(prefix) ? decodeURIComponent(req.url.slice(prefix.length)) : null;
    if (file && broken.includes(file)) {
      res.writeHead(500).end('mirror failure');
      return;
    }
    const at = file ? path.join(SOURCE, file) : '';
    if (!file || file.includes('..') || !existsSync(at) || !statSync(at).isFile()) {
      res.writeHead(404).end('Entry not found');
      return;
    }
    res.writeHead(200, { 'Content-Length': statSync(at).size, 'Content-Type': 'application/octet-stream' });
    if (req.method === 'HEAD') res.end();
    else createReadStream(at).pipe(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

function fetchModel(dir: string, env: Record<string, string>): Promise<{ code: number | null; result: { status: string; reason?: string } }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(ROOT, 'tools/fetch-model.mjs'), '--dir', dir, '--probe-timeout-ms', '3000'], {
      env: { ...process.env, KB_MODELS_DIR: '', EMBEDDINGS_MODEL: '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, result: JSON.parse(out.trim().split('\n').pop() || '{}') }));
  });
}

const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');
const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(path.join(os.tmpdir(), 'kb-fetch-model-'));
  dirs.push(d);
  return d;
};
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe('tools/fetch-model.mjs', () => {
  it('downloads the default model from the hub into the local layout, then finds it there without the network', async () => {
    const mirror = await startMirror();
    const dir = tempDir();
    try {
      const first = await fetchModel(dir, { HF_ENDPOINT: mirror.url });
      expect(first).toEqual({ code: 0, result: { status: 'fetched', model: MODEL, dir } });
      for (const f of ['config.json', 'tokenizer.json', 'tokenizer_config.json', 'onnx/model_quantized.onnx']) {
        expect([f, existsSync(path.join(dir, MODEL, f))]).toEqual([f, true]);
      }
      expect(sha256(path.join(dir, MODEL, 'onnx/model_quantized.onnx'))).toBe(sha256(path.join(SOURCE, 'onnx/model_quantized.onnx')));
      expect(mirror.requests).toContain(`GET /${MODEL}/resolve/main/onnx/model_quantized.onnx`);
    } finally {
      await mirror.close();
    }
    // Offline now (nothing listens on the mirror's port): the local copy is enough.
    const again = await fetchModel(dir, { HF_ENDPOINT: mirror.url });
    expect(again).toEqual({ code: 0, result: { status: 'present', model: MODEL, dir } });
  });

  it('reports an unreachable hub with exit code 3 and writes nothing', async () => {
    const mirror = await startMirror();
    await mirror.close(); // a port nobody listens on
    const dir = tempDir();
    const { code, result } = await fetchModel(dir, { HF_ENDPOINT: mirror.url });
    expect(code).toBe(3);
    expect(result.status).toBe('unreachable');
    expect(result.reason).toMatch(/cannot be reached \(ECONNREFUSED\)/);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('fails clearly when a file breaks mid-download, leaving no partial model behind', async () => {
    const mirror = await startMirror(['onnx/model_quantized.onnx']);
    const dir = tempDir();
    try {
      const { code, result } = await fetchModel(dir, { HF_ENDPOINT: mirror.url });
      expect(code).toBe(1);
      expect(result.status).toBe('failed');
      expect(result.reason).toMatch(/download or load failed/);
      expect(existsSync(path.join(dir, MODEL, 'onnx/model_quantized.onnx'))).toBe(false);
      const leftovers = existsSync(dir)
        ? readdirSync(dir, { recursive: true })
            .map(String)
            .filter((f) => /\.tmp\./.test(f))
        : [];
      expect(leftovers).toEqual([]);
    } finally {
      await mirror.close();
    }
  });

  it('says the hub has no such model (exit 1) instead of retrying forever', async () => {
    const mirror = await startMirror();
    try {
      const dir = tempDir();
      const child = await new Promise<{ code: number | null; out: string }>((resolve) => {
        const c = spawn(process.execPath, [path.join(ROOT, 'tools/fetch-model.mjs'), '--dir', dir, '--model', 'nobody/no-such-model'], {
          env: { ...process.env, HF_ENDPOINT: mirror.url },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let out = '';
        c.stdout.on('data', (d) => (out += d));
        c.on('exit', (code) => resolve({ code, out }));
      });
      expect(child.code).toBe(1);
      expect(JSON.parse(child.out)).toMatchObject({ status: 'failed', reason: expect.stringMatching(/has no model nobody\/no-such-model .*HTTP 404/) });
    } finally {
      await mirror.close();
    }
  });
});

import { createHash } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { createLocalStorageHandler, createObjectStorage, LocalObjectStorage, type LocalStorageConfig, StorageError } from './index';

const PDF = '/work/shared/corpus/pdf/OSHA2001.pdf';
const SECRET = 'test-signing-secret-0123456789';

interface Harness {
  storage: LocalObjectStorage;
  server: http.Server;
  baseUrl: string;
  rootDir: string;
}

/** A real HTTP server on 127.0.0.1:0 that mounts the handler, like the gateway does. */
async function startHarness(overrides: Partial<LocalStorageConfig> = {}): Promise<Harness> {
  const rootDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'kb-storage-local-'));
  let handler: ReturnType<typeof createLocalStorageHandler> | undefined;
  const server = http.createServer((req, res) => {
    void handler!(req, res).then((handled) => {
      if (!handled) res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not a storage path');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const storage = new LocalObjectStorage({
    rootDir,
    publicBaseUrl: baseUrl,
    signingSecret: SECRET,
    maxUploadBytes: 2 * 1024 * 1024,
    ...overrides,
  });
  await storage.ensureReady();
  handler = createLocalStorageHandler(storage);
  return { storage, server, baseUrl, rootDir };
}

async function stopHarness(h: Harness | undefined): Promise<void> {
  if (!h) return;
  h.server.closeAllConnections();
  await new Promise<void>((resolve) => h.server.close(() => resolve()));
  await fsp.rm(h.rootDir, { recursive: true, force: true });
}

/** Every regular file under dir (to prove no partial or temp files are left). */
async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await fsp.readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) out.push(path.join(entry.parentPath ?? (entry as unknown as { path: string }).path, entry.name));
  }
  return out;
}

async function errorCode(res: Response): Promise<string> {
  const body = (await res.json()) as { error: { code: string; message: string } };
  expect(typeof body.error.message).toBe('string');
  return body.error.code;
}

/** Raw request with an exact path (fetch/URL would normalise `..` and `%2e%2e`). */
function rawRequest(baseUrl: string, method: string, rawPath: string): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: hostname, port, method, path: rawPath }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('LocalObjectStorage through a real HTTP server', () => {
  let h: Harness;
  let pdf: Buffer;
  const key = 'orgs/org-1/documents/2b0c7f9e-9a8e-4a57-9d3e-0d6c3f7a1e11/original';

  beforeAll(async () => {
    pdf = await fsp.readFile(PDF);
    h = await startHarness();
  });
  afterAll(() => stopHarness(h));

  it('uploads a real PDF through the presigned PUT URL and serves the same bytes back', async () => {
    const put = await h.storage.presignPut(key, { contentType: 'application/pdf', expiresInSeconds: 7200 });
    expect(put.method).toBe('PUT');
    expect(put.url.startsWith(`${h.baseUrl}/storage/v1/orgs/org-1/documents/`)).toBe(true);
    expect(put.url).toMatch(/X-Kb-Method=PUT&X-Kb-Expires=\d+&.*X-Kb-Signature=[0-9a-f]{64}$/);
    expect(Math.abs(put.expiresAt.getTime() - (Date.now() + 7200_000))).toBeLessThan(2000);

    const res = await fetch(put.url, { method: 'PUT', body: pdf, headers: { 'Content-Type': 'application/pdf' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('etag')).toBe(`"${createHash('md5').update(pdf).digest('hex')}"`);

    expect(await h.storage.stat(key)).toEqual({ size: pdf.length, contentType: 'application/pdf', etag: expect.stringMatching(/^[0-9a-f]{32}$/) });

    const get = await h.storage.presignGet(key, { expiresInSeconds: 600, fileName: 'OSHA2001.pdf', contentType: 'application/pdf' });
    expect(get.method).toBe('GET');
    const dl = await fetch(get.url);
    expect(dl.status).toBe(200);
    expect(dl.headers.get('content-type')).toBe('application/pdf');
    expect(dl.headers.get('content-length')).toBe(String(pdf.length));
    expect(Buffer.from(await dl.arrayBuffer()).equals(pdf)).toBe(true);

    const target = path.join(h.rootDir, '..', `kb-dl-${process.pid}-${Date.now()}`, 'copy.pdf');
    try {
      await h.storage.downloadToFile(key, target);
      expect((await fsp.readFile(target)).equals(pdf)).toBe(true);
      expect((await fsp.readdir(path.dirname(target))).sort()).toEqual(['copy.pdf']);
    } finally {
      await fsp.rm(path.dirname(target), { recursive: true, force: true });
    }
  });

  it('streams a request body without Content-Length (chunked) and stores it whole', async () => {
    const k = 'orgs/org-1/documents/streamed/original';
    const put = await h.storage.presignPut(k, { contentType: 'application/pdf', expiresInSeconds: 60 });
    const chunks = [pdf.subarray(0, 100_000), pdf.subarray(100_000, 500_000), pdf.subarray(500_000)];
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        const next = chunks.shift();
        if (next) controller.enqueue(next);
        else controller.close();
      },
    });
    const res = await fetch(put.url, {
      method: 'PUT',
      body,
      headers: { 'Content-Type': 'application/pdf' },
      duplex: 'half',
    });
    expect(res.status).toBe(200);
    expect(await h.storage.stat(k)).toEqual({ size: pdf.length, contentType: 'application/pdf', etag: expect.stringMatching(/^[0-9a-f]{32}$/) });
  });

  it('download carries Content-Disposition with the (non-ASCII) file name and the signed content type; HEAD has no body', async () => {
    const get = await h.storage.presignGet(key, {
      expiresInSeconds: 600,
      fileName: 'Übersicht "OSHA" 2001 (final).pdf',
      contentType: 'application/pdf',
    });
    const res = await fetch(get.url);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-disposition')).toBe(
      `attachment; filename="_bersicht _OSHA_ 2001 (final).pdf"; filename*=UTF-8''%C3%9Cbersicht%20%22OSHA%22%202001%20%28final%29.pdf`,
    );
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    await res.arrayBuffer();

    const head = await fetch(get.url, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(String(pdf.length));
    expect(head.headers.get('content-disposition')).toContain("filename*=UTF-8''%C3%9Cbersicht");
    expect((await head.arrayBuffer()).byteLength).toBe(0);
  });

  it('serves a single byte range (206)', async () => {
    const get = await h.storage.presignGet(key, { expiresInSeconds: 60, fileName: 'a.pdf', contentType: 'application/pdf' });
    const res = await fetch(get.url, { headers: { Range: 'bytes=10-19' } });
    expect(res.status).toBe(206);
    expect(res.headers.get('content-range')).toBe(`bytes 10-19/${pdf.length}`);
    expect(Buffer.from(await res.arrayBuffer()).equals(pdf.subarray(10, 20))).toBe(true);
    const bad = await fetch(get.url, { headers: { Range: `bytes=${pdf.length}-` } });
    expect(bad.status).toBe(416);
    await bad.arrayBuffer();
  });

  it('records the Content-Type actually sent, normalised, even when it differs from the signed one', async () => {
    const k = 'orgs/org-1/documents/ct/original';
    const put = await h.storage.presignPut(k, { contentType: 'application/pdf', expiresInSeconds: 60 });
    let res = await fetch(put.url, { method: 'PUT', body: 'hello', headers: { 'Content-Type': 'Text/Plain; charset=UTF-8' } });
    expect(res.status).toBe(200);
    expect(await h.storage.stat(k)).toEqual({ size: 5, contentType: 'text/plain', etag: expect.stringMatching(/^[0-9a-f]{32}$/) });

    // No Content-Type at all (a Buffer body makes fetch send none) → application/octet-stream, like the s3 driver.
    res = await fetch(put.url, { method: 'PUT', body: Buffer.from('hello!') });
    expect(res.status).toBe(200);
    expect(await h.storage.stat(k)).toEqual({ size: 6, contentType: 'application/octet-stream', etag: expect.stringMatching(/^[0-9a-f]{32}$/) });

    res = await fetch(put.url, { method: 'PUT', body: 'x', headers: { 'Content-Type': 'APPLICATION/PDF ; foo=bar' } });
    expect(res.status).toBe(200);
    expect(await h.storage.stat(k)).toEqual({ size: 1, contentType: 'application/pdf', etag: expect.stringMatching(/^[0-9a-f]{32}$/) });
  });

  it('refuses an expired URL with 403 and stores nothing', async () => {
    const k = 'orgs/org-1/documents/expired/original';
    const put = await h.storage.presignPut(k, { contentType: 'application/pdf', expiresInSeconds: 1 });
    await new Promise((r) => setTimeout(r, Math.max(0, put.expiresAt.getTime() - Date.now()) + 50));
    const res = await fetch(put.url, { method: 'PUT', body: 'late', headers: { 'Content-Type': 'application/pdf' } });
    expect(res.status).toBe(403);
    expect(await errorCode(res)).toBe('AccessDenied');
    expect(await h.storage.stat(k)).toBeNull();
  });

  it('refuses tampered URLs with 403 SignatureDoesNotMatch', async () => {
    const put = await h.storage.presignPut(key, { contentType: 'application/pdf', expiresInSeconds: 60 });
    const url = new URL(put.url);
    const sig = url.searchParams.get('X-Kb-Signature')!;

    const flipped = new URL(url);
    flipped.searchParams.set('X-Kb-Signature', (sig[0] === 'a' ? 'b' : 'a') + sig.slice(1));
    const longer = new URL(url);
    longer.searchParams.set('X-Kb-Expires', String(Number(url.searchParams.get('X-Kb-Expires')) + 3600));
    const otherKey = new URL(put.url.replace('/original?', '/other?'));
    const otherMethod = new URL(url);
    otherMethod.searchParams.set('X-Kb-Method', 'GET');
    const shortSig = new URL(url);
    shortSig.searchParams.set('X-Kb-Signature', sig.slice(0, 10));

    for (const u of [flipped, longer, otherKey, otherMethod, shortSig]) {
      const res = await fetch(u, { method: u === otherMethod ? 'GET' : 'PUT', body: u === otherMethod ? undefined : 'x' });
      expect(res.status).toBe(403);
      expect(await errorCode(res)).toBe('SignatureDoesNotMatch');
    }

    const unsigned = await fetch(`${h.baseUrl}/storage/v1/${key}`);
    expect(unsigned.status).toBe(403);
    expect(await errorCode(unsigned)).toBe('AccessDenied');

    // A URL signed with another secret is refused too.
    const other = new LocalObjectStorage({
      rootDir: h.rootDir,
      publicBaseUrl: h.baseUrl,
      signingSecret: 'another-secret-0123456789',
      maxUploadBytes: 10,
    });
    const foreign = await other.presignGet(key, { expiresInSeconds: 60, fileName: 'a.pdf', contentType: 'application/pdf' });
    const res = await fetch(foreign.url);
    expect(res.status).toBe(403);
    await res.arrayBuffer();
  });

  it('answers 405 for a method other than the signed one', async () => {
    const put = await h.storage.presignPut(key, { contentType: 'application/pdf', expiresInSeconds: 60 });
    const get = await h.storage.presignGet(key, { expiresInSeconds: 60, fileName: 'a.pdf', contentType: 'application/pdf' });
    const cases: Array<[string, string]> = [
      [put.url, 'GET'],
      [put.url, 'HEAD'],
      [get.url, 'PUT'],
      [get.url, 'DELETE'],
      [put.url, 'POST'],
    ];
    for (const [url, method] of cases) {
      const res = await fetch(url, { method, body: method === 'PUT' || method === 'POST' ? 'x' : undefined });
      expect({ method, status: res.status }).toEqual({ method, status: 405 });
      if (method !== 'HEAD') expect(await errorCode(res)).toBe('MethodNotAllowed');
    }
    // The object was not overwritten by the refused PUT.
    expect((await h.storage.stat(key))?.size).toBe(pdf.length);
  });

  it('answers 404 NoSuchKey for a missing object', async () => {
    const get = await h.storage.presignGet('orgs/org-1/documents/missing/original', {
      expiresInSeconds: 60,
      fileName: 'a.pdf',
      contentType: 'application/pdf',
    });
    const res = await fetch(get.url);
    expect(res.status).toBe(404);
    expect(await errorCode(res)).toBe('NoSuchKey');
  });

  it('rejects path traversal and malformed keys (INVALID_KEY) in every method and over HTTP', async () => {
    const bad = ['../etc/passwd', 'a/../../b', '/etc/passwd', 'a\\b', 'a\u0000b', '', 'a//b', './a', 'a/.', 'a/', 'a/.kb-tmp-1', 'x'.repeat(1025)];
    for (const k of bad) {
      await expect(h.storage.presignPut(k, { contentType: 'text/plain', expiresInSeconds: 60 })).rejects.toMatchObject({
        name: 'StorageError',
        code: 'INVALID_KEY',
      });
      await expect(h.storage.presignGet(k, { contentType: 'text/plain', fileName: 'a', expiresInSeconds: 60 })).rejects.toMatchObject({
        code: 'INVALID_KEY',
      });
      await expect(h.storage.stat(k)).rejects.toBeInstanceOf(StorageError);
      await expect(h.storage.delete(k)).rejects.toMatchObject({ code: 'INVALID_KEY' });
      await expect(h.storage.downloadToFile(k, path.join(h.rootDir, 'x'))).rejects.toMatchObject({ code: 'INVALID_KEY' });
    }
    for (const p of [
      '/storage/v1/..%2F..%2Fetc%2Fpasswd',
      '/storage/v1/a/%2e%2e/b',
      '/storage/v1/a/../../x',
      '/storage/v1/a%5Cb',
      '/storage/v1/a%00b',
      '/storage/v1/%E0%A4%A',
    ]) {
      const res = await rawRequest(h.baseUrl, 'GET', `${p}?X-Kb-Method=GET&X-Kb-Expires=9999999999&X-Kb-Signature=${'0'.repeat(64)}`);
      expect({ p, status: res.status }).toEqual({ p, status: 400 });
      expect(JSON.parse(res.body).error.code).toBe('InvalidKey');
    }
  });

  it('accepts keys with spaces and unicode (percent-encoded in the URL)', async () => {
    const k = 'orgs/org 1/documents/ü ñ/original';
    const put = await h.storage.presignPut(k, { contentType: 'text/plain', expiresInSeconds: 60 });
    expect(put.url).toContain('/orgs/org%201/documents/%C3%BC%20%C3%B1/original?');
    const res = await fetch(put.url, { method: 'PUT', body: 'unicode', headers: { 'Content-Type': 'text/plain' } });
    expect(res.status).toBe(200);
    expect(await h.storage.stat(k)).toEqual({ size: 7, contentType: 'text/plain', etag: expect.stringMatching(/^[0-9a-f]{32}$/) });

    // '+' in a signed content type survives the query string round trip.
    const svg = await h.storage.presignPut('orgs/o/documents/svg/original', { contentType: 'image/svg+xml', expiresInSeconds: 60 });
    expect(svg.url).toContain('X-Kb-Content-Type=image%2Fsvg%2Bxml');
    const res2 = await fetch(svg.url, { method: 'PUT', body: '<svg/>', headers: { 'Content-Type': 'image/svg+xml' } });
    expect(res2.status).toBe(200);
    expect(await h.storage.stat('orgs/o/documents/svg/original')).toEqual({
      size: 6,
      contentType: 'image/svg+xml',
      etag: expect.stringMatching(/^[0-9a-f]{32}$/),
    });
  });

  it('answers 409 KeyConflict when a key would turn an object into a directory or vice versa', async () => {
    const upload = async (k: string) => {
      const put = await h.storage.presignPut(k, { contentType: 'text/plain', expiresInSeconds: 60 });
      return fetch(put.url, { method: 'PUT', body: k, headers: { 'Content-Type': 'text/plain' } });
    };
    expect((await upload('orgs/conflict/file')).status).toBe(200);
    const under = await upload('orgs/conflict/file/child');
    expect(under.status).toBe(409);
    expect(await errorCode(under)).toBe('KeyConflict');
    const over = await upload('orgs/conflict');
    expect(over.status).toBe(409);
    expect(await errorCode(over)).toBe('KeyConflict');
    expect(await h.storage.stat('orgs/conflict/file')).toEqual({ size: 18, contentType: 'text/plain', etag: expect.stringMatching(/^[0-9a-f]{32}$/) });
    expect((await filesUnder(path.join(h.rootDir, 'objects', 'orgs'))).filter((f) => f.includes('.kb-tmp-'))).toEqual([]);
  });

  it('answers CORS preflight and leaves other paths to the caller', async () => {
    const put = await h.storage.presignPut(key, { contentType: 'application/pdf', expiresInSeconds: 60 });
    const pre = await fetch(put.url, {
      method: 'OPTIONS',
      headers: { Origin: 'http://app.example', 'Access-Control-Request-Method': 'PUT', 'Access-Control-Request-Headers': 'content-type' },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-origin')).toBe('*');
    expect(pre.headers.get('access-control-allow-methods')).toContain('PUT');

    for (const p of ['/api/v2/documents', '/storage/v10/x', '/storage']) {
      const res = await fetch(`${h.baseUrl}${p}`);
      expect(res.status).toBe(404);
      expect(await res.text()).toBe('not a storage path');
    }
  });

  it('delete removes the object, is idempotent, and downloadToFile of a missing object is NOT_FOUND', async () => {
    const k = 'orgs/org-1/documents/to-delete/original';
    const put = await h.storage.presignPut(k, { contentType: 'text/plain', expiresInSeconds: 60 });
    expect((await fetch(put.url, { method: 'PUT', body: 'bye', headers: { 'Content-Type': 'text/plain' } })).status).toBe(200);
    expect(await h.storage.stat(k)).not.toBeNull();
    await h.storage.delete(k);
    expect(await h.storage.stat(k)).toBeNull();
    await h.storage.delete(k);
    await h.storage.delete('orgs/never/existed');
    await expect(h.storage.downloadToFile(k, path.join(h.rootDir, 'out'))).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(fsp.access(path.join(h.rootDir, 'objects/orgs/org-1/documents/to-delete'))).rejects.toThrow();
    expect(await h.storage.stat('orgs/org-1/documents')).toBeNull(); // a "directory" is not an object
  });
});

describe('LocalObjectStorage upload limits and aborted uploads', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ maxUploadBytes: 64 * 1024, pathPrefix: '/files/' });
  });
  afterAll(() => stopHarness(h));

  it('answers 413 for a declared Content-Length over the limit and stores nothing', async () => {
    const k = 'orgs/o/documents/big/original';
    const put = await h.storage.presignPut(k, { contentType: 'application/pdf', expiresInSeconds: 60 });
    expect(put.url.startsWith(`${h.baseUrl}/files/orgs/`)).toBe(true);
    const res = await fetch(put.url, { method: 'PUT', body: Buffer.alloc(64 * 1024 + 1, 1), headers: { 'Content-Type': 'application/pdf' } });
    expect(res.status).toBe(413);
    expect(await errorCode(res)).toBe('EntityTooLarge');
    expect(await h.storage.stat(k)).toBeNull();
    expect(await filesUnder(h.rootDir)).toEqual([]);
  });

  it('answers 413 for a streamed body that grows over the limit and stores nothing', async () => {
    const k = 'orgs/o/documents/big-stream/original';
    const put = await h.storage.presignPut(k, { contentType: 'application/pdf', expiresInSeconds: 60 });
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= 256 * 1024) return controller.close();
        sent += 16 * 1024;
        controller.enqueue(new Uint8Array(16 * 1024));
      },
    });
    const res = await fetch(put.url, { method: 'PUT', body, duplex: 'half', headers: { 'Content-Type': 'application/pdf' } });
    expect(res.status).toBe(413);
    await res.arrayBuffer();
    expect(await h.storage.stat(k)).toBeNull();
    expect(await filesUnder(h.rootDir)).toEqual([]);
  });

  it('caps an upload at the size signed into its URL (contentLength): more → 413, a tampered size → 403, the size itself fits', async () => {
    const k = 'orgs/o/documents/declared/original';
    const put = await h.storage.presignPut(k, { contentType: 'text/plain', expiresInSeconds: 60, contentLength: 5 });
    expect(new URL(put.url).searchParams.get('X-Kb-Content-Length')).toBe('5');
    const declaredMore = await fetch(put.url, { method: 'PUT', body: 'hello!', headers: { 'Content-Type': 'text/plain' } });
    expect(declaredMore.status).toBe(413);
    expect(await errorCode(declaredMore)).toBe('EntityTooLarge');
    const chunks = [Buffer.from('hel'), Buffer.from('lo, world')];
    const body = new ReadableStream<Uint8Array>({ pull: (c) => (chunks.length ? c.enqueue(chunks.shift()!) : c.close()) });
    const streamed = await fetch(put.url, { method: 'PUT', body, duplex: 'half', headers: { 'Content-Type': 'text/plain' } });
    expect(streamed.status).toBe(413);
    await streamed.arrayBuffer();
    expect(await h.storage.stat(k)).toBeNull();
    const tampered = new URL(put.url);
    tampered.searchParams.set('X-Kb-Content-Length', '50');
    const forged = await fetch(tampered, { method: 'PUT', body: 'hello!', headers: { 'Content-Type': 'text/plain' } });
    expect(forged.status).toBe(403);
    await forged.arrayBuffer();
    expect((await fetch(put.url, { method: 'PUT', body: 'hello', headers: { 'Content-Type': 'text/plain' } })).status).toBe(200);
    expect((await h.storage.stat(k))?.size).toBe(5);
    await h.storage.delete(k);
  });

  it('accepts exactly maxUploadBytes', async () => {
    const k = 'orgs/o/documents/exact/original';
    const put = await h.storage.presignPut(k, { contentType: 'application/octet-stream', expiresInSeconds: 60 });
    const res = await fetch(put.url, { method: 'PUT', body: Buffer.alloc(64 * 1024, 7), headers: { 'Content-Type': 'application/octet-stream' } });
    expect(res.status).toBe(200);
    expect((await h.storage.stat(k))?.size).toBe(64 * 1024);
    await h.storage.delete(k);
  });

  it('leaves no partial object (and no temp file) when the client disconnects mid-upload', async () => {
    const k = 'orgs/o/documents/aborted/original';
    const put = await h.storage.presignPut(k, { contentType: 'application/pdf', expiresInSeconds: 60 });
    const url = new URL(put.url);
    let partialSeen: string[] = [];
    await new Promise<void>((resolve) => {
      const req = http.request({
        host: url.hostname,
        port: url.port,
        method: 'PUT',
        path: `${url.pathname}${url.search}`,
        headers: { 'Content-Type': 'application/pdf', 'Content-Length': String(60 * 1024) },
      });
      req.on('error', () => resolve());
      req.write(Buffer.alloc(20 * 1024, 1), () => {
        setTimeout(() => {
          void filesUnder(h.rootDir).then((files) => {
            partialSeen = files;
            req.destroy();
            resolve();
          });
        }, 100);
      });
    });
    // The upload was in progress: only a temp file existed, never the object.
    expect(partialSeen).toHaveLength(1);
    expect(path.basename(partialSeen[0])).toMatch(/^\.kb-tmp-/);
    // Give the server a moment to notice the disconnect and clean up.
    for (let i = 0; i < 50 && (await filesUnder(h.rootDir)).length > 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(await h.storage.stat(k)).toBeNull();
    expect(await filesUnder(h.rootDir)).toEqual([]);
  });
});

describe('LocalObjectStorage configuration and readiness', () => {
  const base = { rootDir: '/tmp/x', publicBaseUrl: 'http://localhost:8080', signingSecret: SECRET, maxUploadBytes: 1 };

  it.each([
    ['a short signing secret', { signingSecret: 'short' }],
    ['a publicBaseUrl that is not a URL', { publicBaseUrl: 'localhost:8080' }],
    ['a non-positive maxUploadBytes', { maxUploadBytes: 0 }],
    ['an empty rootDir', { rootDir: '' }],
    ['a pathPrefix without leading slash', { pathPrefix: 'storage' }],
  ])('rejects %s with INVALID_CONFIG', (_what, patch) => {
    expect(() => new LocalObjectStorage({ ...base, ...patch })).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG' }));
  });

  it('builds the configured driver through createObjectStorage', () => {
    const storage = createObjectStorage({ driver: 'local', local: base });
    expect(storage.driver).toBe('local');
    expect(storage).toBeInstanceOf(LocalObjectStorage);
    expect(() => createObjectStorage({ driver: 'ftp' } as never)).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG' }));
  });

  it('rejects bad presign options with INVALID_ARGUMENT', async () => {
    const storage = new LocalObjectStorage(base);
    await expect(storage.presignPut('a', { contentType: 'text/plain', expiresInSeconds: 0 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(storage.presignPut('a', { contentType: 'text/plain', expiresInSeconds: 604_801 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(storage.presignPut('a', { contentType: '', expiresInSeconds: 60 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(storage.presignGet('a', { contentType: 'text/plain', fileName: 'a\r\nb', expiresInSeconds: 60 })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
  });

  it('ensureReady creates the directories, and throws UNAVAILABLE when rootDir cannot be used', async () => {
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'kb-storage-ready-'));
    try {
      const storage = new LocalObjectStorage({ ...base, rootDir: path.join(dir, 'nested', 'root') });
      await storage.ensureReady();
      expect((await fsp.readdir(path.join(dir, 'nested', 'root'))).sort()).toEqual(['meta', 'objects']);
      await fsp.writeFile(path.join(dir, 'file'), 'not a dir');
      const broken = new LocalObjectStorage({ ...base, rootDir: path.join(dir, 'file') });
      await expect(broken.ensureReady()).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    } finally {
      await fsp.rm(dir, { recursive: true, force: true });
    }
  });
});

describe('LocalObjectStorage upload slots: move, closed URLs, CORS origins', () => {
  let h: Harness;
  afterEach(() => stopHarness(h));

  it('moves the checked version of an upload and refuses every later PUT to its closed URL', async () => {
    h = await startHarness();
    const put = await h.storage.presignPut('uploads/d1/slot', { contentType: 'text/plain', expiresInSeconds: 60 });
    expect((await fetch(put.url, { method: 'PUT', headers: { 'Content-Type': 'text/plain' }, body: 'first' })).status).toBe(200);
    const checked = (await h.storage.stat('uploads/d1/slot'))!;
    expect(checked.etag).toBe(createHash('md5').update('first').digest('hex'));
    // Replaced after it was checked: the move refuses the new version.
    expect((await fetch(put.url, { method: 'PUT', headers: { 'Content-Type': 'text/plain' }, body: 'second' })).status).toBe(200);
    await expect(h.storage.move('uploads/d1/slot', 'documents/d1/original', { ifEtag: checked.etag })).rejects.toMatchObject({ code: 'PRECONDITION_FAILED' });
    const current = (await h.storage.stat('uploads/d1/slot'))!;
    await h.storage.closeUploads('uploads/d1/slot');
    await h.storage.move('uploads/d1/slot', 'documents/d1/original', { ifEtag: current.etag });
    expect(await h.storage.stat('uploads/d1/slot')).toBeNull();
    expect(await h.storage.stat('documents/d1/original')).toMatchObject({ size: 6, contentType: 'text/plain' });
    const late = await fetch(put.url, { method: 'PUT', headers: { 'Content-Type': 'text/plain' }, body: 'late' });
    expect(late.status).toBe(403);
    expect(await errorCode(late)).toBe('AccessDenied');
    expect(await h.storage.stat('uploads/d1/slot')).toBeNull();
    await expect(h.storage.move('uploads/d1/slot', 'documents/d1/x')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    // Reopened (the sweep after expiry, or a process call that could not finish): PUT works again.
    await h.storage.reopenUploads('uploads/d1/slot');
    expect((await fetch(put.url, { method: 'PUT', headers: { 'Content-Type': 'text/plain' }, body: 'again' })).status).toBe(200);
  });

  it('answers CORS preflights only for the configured origins', async () => {
    h = await startHarness({ corsOrigins: ['https://app.example'] });
    const put = await h.storage.presignPut('uploads/d2/slot', { contentType: 'text/plain', expiresInSeconds: 60 });
    const preflight = (origin: string) => fetch(put.url, { method: 'OPTIONS', headers: { Origin: origin, 'Access-Control-Request-Method': 'PUT' } });
    const ok = await preflight('https://app.example');
    expect(ok.status).toBe(204);
    expect(ok.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect(ok.headers.get('vary')).toContain('Origin');
    const refused = await preflight('https://evil.example');
    expect(refused.status).toBe(403);
    expect(refused.headers.get('access-control-allow-origin')).toBeNull();
  });
});

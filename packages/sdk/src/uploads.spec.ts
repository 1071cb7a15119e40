import { mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { itemSource, putWithRetries, UploadPutError, type UploadSource } from './documents';
import { fileSource } from './files';

/** A PUT as the storage received it. */
interface Put {
  method: string;
  contentType: string | undefined;
  contentLength: string | undefined;
  transferEncoding: string | undefined;
  authorization: string | undefined;
  body: Buffer;
}

/**
 * A real HTTP server standing in for the object storage behind a presigned URL: answers the n-th
 * PUT with `statuses[n]` (the last repeats) and records each.
 */
async function storage(statuses: number[]) {
  const puts: Put[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      puts.push({
        method: req.method!,
        contentType: req.headers['content-type'],
        contentLength: req.headers['content-length'],
        transferEncoding: req.headers['transfer-encoding'],
        authorization: req.headers.authorization,
        body: Buffer.concat(chunks),
      });
      const status = statuses[Math.min(puts.length - 1, statuses.length - 1)];
      res.writeHead(status, { 'Content-Type': 'text/plain' }).end(status < 300 ? '' : `storage says ${status}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/bucket/key?X-Signature=abc`;
  return { puts, target: { url, method: 'PUT', contentType: 'text/markdown' }, close: () => new Promise((resolve) => server.close(resolve)) };
}

const bytes = Buffer.from('# Policy\n\nAll alerts must be reviewed.\n'.repeat(2000));

describe('the PUT of an upload to the presigned URL', () => {
  let store: Awaited<ReturnType<typeof storage>> | undefined;
  afterEach(async () => {
    await store?.close();
    store = undefined;
  });

  const sources: Array<[string, () => Promise<UploadSource>]> = [
    ['a Blob (fetch)', async () => itemSource({ name: 'policy.md', data: new Blob([bytes]) }, 0)],
    ['a File (fetch)', async () => itemSource(new File([bytes], 'policy.md'), 0)],
    ['bytes (fetch)', async () => itemSource({ name: 'policy.md', data: new Uint8Array(bytes) }, 0)],
    [
      'a path (node:http, streamed)',
      async () => {
        const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'kb-sdk-put-')), 'policy.md');
        writeFileSync(file, bytes);
        return fileSource(file);
      },
    ],
  ];

  it.each(sources)('of %s is retried after a 503 and a 500, sends Content-Length and no bearer header, and reports bytes', async (_, make) => {
    store = await storage([503, 500, 200]);
    const source = await make();
    expect([source.name, source.size]).toEqual(['policy.md', bytes.length]);
    const sent: number[] = [];
    await putWithRetries(source, store.target, (n) => sent.push(n), undefined);
    expect(store.puts).toHaveLength(3);
    for (const put of store.puts) {
      expect(put).toMatchObject({
        method: 'PUT',
        contentType: 'text/markdown',
        contentLength: String(bytes.length),
        transferEncoding: undefined,
        authorization: undefined,
      });
      expect(put.body.equals(bytes)).toBe(true);
    }
    expect(sent[sent.length - 1]).toBe(bytes.length);
    expect(sent.filter((n) => n === 0).length).toBeGreaterThanOrEqual(3);
  });

  it.each(sources)('of %s is not retried after a 403: the storage refusal is thrown with its status and body', async (_, make) => {
    store = await storage([403]);
    const error = await putWithRetries(await make(), store.target, () => undefined).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UploadPutError);
    expect(error).toMatchObject({ status: 403, message: 'Upload of policy.md refused by storage: 403 storage says 403' });
    expect(store.puts).toHaveLength(1);
  });

  it('gives up after two retries when the storage cannot be reached', async () => {
    store = await storage([200]);
    const target = store.target;
    await store.close();
    store = undefined;
    const error = await putWithRetries(itemSource({ name: 'a.md', data: bytes }, 0), target, () => undefined).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UploadPutError);
    expect(error).toMatchObject({ status: null, message: expect.stringMatching(/^Upload of a\.md failed: ECONNREFUSED/) });
  });
});

describe('in-memory upload items', () => {
  it('take the name of a File or of { name, data }, and refuse anything else with the item it concerns', () => {
    expect(itemSource(new File(['x'], 'notes.txt'), 0)).toMatchObject({ file: 'notes.txt', name: 'notes.txt', size: 1 });
    expect(itemSource({ name: 'data.csv', data: new ArrayBuffer(3) }, 0)).toMatchObject({ name: 'data.csv', size: 3 });
    expect(() => itemSource(new Blob(['x']) as File, 2)).toThrow('Item 2: a file name is needed (a File, or { name, data }); a bare Blob has none.');
    expect(() => itemSource({ name: 'a.txt', data: 'text' as unknown as Blob }, 1)).toThrow(/^Item 1: data must be a Blob/);
    expect(() => itemSource('a.txt' as unknown as File, 0)).toThrow(/^Item 0: expected a File/);
  });
});

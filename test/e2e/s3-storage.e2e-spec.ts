import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client as MinioClient } from 'minio';
import { Client as PgClient } from 'pg';
import { api, corpusFile, newOrg, ROOT, uploadFile, waitForDocument, ExtraStack, startExtraStack, freePort } from './support/harness';

jest.setTimeout(300_000);

const MINIO_SH = path.join(ROOT, 'tools/minio.sh');
const skip = process.env.KB_SKIP_MINIO === '1';
const minioBin = skip ? null : spawnSync('bash', [MINIO_SH, 'path'], { encoding: 'utf8' });
const haveMinio = !skip && minioBin?.status === 0;

/**
 * The same user journey on the production storage path: the `s3` driver against a real MinIO
 * (signature-checking presigned URLs issued by MinIO, stat for process, streamed download for
 * ingestion, delete). A second stack is started for it with STORAGE_DRIVER=s3.
 */
(skip ? describe.skip : describe)('documents on S3 storage (MinIO)', () => {
  let dir: string;
  let minioPid: number;
  let stack: ExtraStack | undefined;
  let baseUrl: string;
  let databaseUrl: string;
  let minio: MinioClient;

  beforeAll(async () => {
    if (!haveMinio) throw new Error(`No MinIO binary: run \`tools/minio.sh ensure\` or set KB_SKIP_MINIO=1. ${minioBin?.stderr ?? ''}`);
    dir = mkdtempSync(path.join(os.tmpdir(), 'kb-e2e-s3-'));
    const port = await freePort();
    minioPid = Number(
      execFileSync('bash', [MINIO_SH, 'start', path.join(dir, 'minio'), String(port)], {
        encoding: 'utf8',
        env: { ...process.env, KB_MINIO_WATCH_PID: String(process.pid) },
      }).trim(),
    );
    const env = {
      STORAGE_DRIVER: 's3',
      S3_ENDPOINT: '127.0.0.1',
      S3_PORT: String(port),
      S3_USE_SSL: 'false',
      S3_ACCESS_KEY: process.env.KB_MINIO_ACCESS_KEY ?? 'kb-test-access',
      S3_SECRET_KEY: process.env.KB_MINIO_SECRET_KEY ?? 'kb-test-secret-key',
      S3_BUCKET: 'kb-e2e-documents',
      // The closed-upload sweep (and the stuck-document sweep) run every second here.
      SWEEP_INTERVAL_MS: '1000',
    };
    minio = new MinioClient({ endPoint: '127.0.0.1', port, useSSL: false, accessKey: env.S3_ACCESS_KEY, secretKey: env.S3_SECRET_KEY, pathStyle: true });
    stack = await startExtraStack(path.join(dir, 'stack'), env);
    ({ baseUrl, databaseUrl } = stack);
  });

  afterAll(async () => {
    await stack?.stop();
    if (minioPid) {
      try {
        process.kill(minioPid, 'SIGTERM');
        // Wait until MinIO has exited, so it writes nothing more into the folder removed below.
        for (let i = 0; i < 100; i++) {
          process.kill(minioPid, 0);
          await new Promise((r) => setTimeout(r, 100));
        }
      } catch {}
    }
    if (dir) rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  });

  it('uploads to a MinIO presigned URL, processes, downloads the same bytes and deletes the object', async () => {
    const { key } = newOrg('S3 Org', { databaseUrl });
    const file = corpusFile('docx/fedramp_tailored_LI-SaaS_Requirements.docx');
    const id = await uploadFile(key, { path: file }, undefined, baseUrl);
    const a = api(key, baseUrl);

    const processed = await a.post('/api/v2/documents/process').send({ document_ids: [id] });
    expect(processed.body.data.processed).toEqual([id]);
    const doc = await waitForDocument(key, id, 120_000, baseUrl);
    expect(doc).toMatchObject({ status: 'completed', size_bytes: readFileSync(file).length, error_message: null });

    const d = (await a.get(`/api/v2/documents/${id}/download`)).body.data;
    expect(new URL(d.download_url).port).not.toBe(new URL(baseUrl).port);
    const res = await fetch(d.download_url);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-disposition')).toContain('fedramp_tailored_LI-SaaS_Requirements.docx');
    expect(Buffer.from(await res.arrayBuffer()).equals(readFileSync(file))).toBe(true);

    const answer = await a.post('/api/v2/agent/query').send({ question: 'What is the LI-SaaS baseline?' });
    expect(answer.body.data.citations.length).toBeGreaterThan(0);
    expect(answer.body.data.citations[0].document_id).toBe(id);

    expect((await a.delete('/api/v2/documents').send({ document_ids: [id] })).body.data.deleted).toEqual([id]);
    expect((await fetch(d.download_url)).status).toBe(404);
  });

  it('reports a content type mismatch of an upload to MinIO', async () => {
    const { key } = newOrg('S3 Org 2', { databaseUrl });
    const a = api(key, baseUrl);
    const slot = (await a.post('/api/v2/documents').send({ file_name: 'notes.txt', content_type: 'text/plain', size_bytes: 5 })).body.data;
    const put = await fetch(slot.upload.url, { method: 'PUT', headers: { 'Content-Type': 'application/pdf' }, body: 'hello' });
    expect(put.status).toBe(200);
    const res = await a.post('/api/v2/documents/process').send({ document_ids: [slot.id] });
    expect(res.body.data.skipped).toEqual([{ document_id: slot.id, reason: 'content_type_mismatch' }]);
  });

  it('keeps what was processed when a late PUT hits the upload URL, and deletes late uploads of a deleted document once the URL expires', async () => {
    const { key } = newOrg('S3 Org 3', { databaseUrl });
    const a = api(key, baseUrl);
    const original = 'Hard hats are required on site at all times.';
    const slot = (await a.post('/api/v2/documents').send({ file_name: 'rules.txt', content_type: 'text/plain', size_bytes: original.length })).body.data;
    const uploadKey = decodeURIComponent(new URL(slot.upload.url).pathname).replace(/^\/kb-e2e-documents\//, '');
    expect(uploadKey).toMatch(new RegExp(`^uploads/${slot.id}/[0-9a-f]{32}$`));
    expect((await fetch(slot.upload.url, { method: 'PUT', headers: { 'Content-Type': 'text/plain' }, body: original })).status).toBe(200);
    expect((await a.post('/api/v2/documents/process').send({ document_ids: [slot.id] })).body.data.processed).toEqual([slot.id]);
    // S3 cannot revoke a presigned URL: the late PUT is stored, but only at the upload key.
    expect((await fetch(slot.upload.url, { method: 'PUT', headers: { 'Content-Type': 'text/plain' }, body: 'REPLACED' })).status).toBe(200);
    expect(await waitForDocument(key, slot.id, 120_000, baseUrl)).toMatchObject({ status: 'completed', size_bytes: original.length });
    const d = (await a.get(`/api/v2/documents/${slot.id}/download`)).body.data;
    expect(await (await fetch(d.download_url)).text()).toBe(original);
    expect(new URL(d.download_url).pathname).not.toContain('uploads/');

    // Delete, then a late PUT: the object it creates is recorded for deletion after the URL's expiry.
    expect((await a.delete('/api/v2/documents').send({ document_ids: [slot.id] })).body.data.deleted).toEqual([slot.id]);
    expect((await fetch(slot.upload.url, { method: 'PUT', headers: { 'Content-Type': 'text/plain' }, body: 'LATE' })).status).toBe(200);
    expect((await minio.statObject('kb-e2e-documents', uploadKey)).size).toBe(4);
    const db = new PgClient({ connectionString: databaseUrl });
    await db.connect();
    try {
      const rows = (await db.query('SELECT delete_after FROM documents.closed_uploads WHERE storage_key = $1', [uploadKey])).rows;
      expect(rows).toHaveLength(1);
      const expiresAt = new Date(slot.upload.expires_at).getTime();
      expect(new Date(rows[0].delete_after).getTime()).toBeGreaterThanOrEqual(expiresAt);
      // Pretend the URL has expired: the sweep deletes the late object and forgets the key.
      await db.query(`UPDATE documents.closed_uploads SET delete_after = now() - interval '1 second' WHERE storage_key = $1`, [uploadKey]);
      for (let i = 0; i < 100; i++) {
        if ((await db.query('SELECT 1 FROM documents.closed_uploads WHERE storage_key = $1', [uploadKey])).rowCount === 0) break;
        await new Promise((r) => setTimeout(r, 200));
      }
      expect((await db.query('SELECT 1 FROM documents.closed_uploads WHERE storage_key = $1', [uploadKey])).rowCount).toBe(0);
      await expect(minio.statObject('kb-e2e-documents', uploadKey)).rejects.toMatchObject({ code: 'NotFound' });
    } finally {
      await db.end();
    }
  });
});

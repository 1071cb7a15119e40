import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { api, baseUrl, kbctl, newOrg } from './support/harness';

jest.setTimeout(120_000);

/** Auth, envelopes, projects, organization, upload-slot rules and process skip reasons. */
describe('API contract', () => {
  const org = newOrg('Contract Org');
  const other = newOrg('Contract Other Org');
  const a = api(org.key);
  const raw = () => request(baseUrl());

  describe('authentication and envelopes', () => {
    it('rejects a missing or invalid key with 401 in the error envelope', async () => {
      const missing = await raw().get('/api/v2/organization');
      expect(missing.status).toBe(401);
      expect(missing.body).toEqual({ success: false, error: { code: 'UNAUTHORIZED', message: expect.any(String) }, request_id: expect.any(String) });
      const wrong = await raw().get('/api/v2/organization').set('Authorization', 'Bearer kb_not-a-real-key');
      expect(wrong.status).toBe(401);
    });

    it('returns the organization of the key and keeps the client request id', async () => {
      const res = await a.get('/api/v2/organization').set('X-Request-Id', 'trace-abc-123');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ success: true, data: { id: org.orgId, name: 'Contract Org' }, request_id: 'trace-abc-123' });
      expect(res.headers['x-request-id']).toBe('trace-abc-123');
      const generated = await a.get('/api/v2/organization').set('X-Request-Id', 'x'.repeat(129));
      expect(generated.body.request_id).not.toBe('x'.repeat(129));
    });

    it('revokes a key at once', async () => {
      const key = kbctl('key', 'create', '--org', org.orgId, '--name', 'temp');
      expect((await api(key.key).get('/api/v2/organization')).status).toBe(200);
      const listed = kbctl('key', 'list', '--org', org.orgId);
      expect(listed.keys.find((k: any) => k.id === key.id)).toMatchObject({ name: 'temp', revoked_at: null });
      expect(JSON.stringify(listed)).not.toContain(key.key);
      kbctl('key', 'revoke', key.id);
      expect((await api(key.key).get('/api/v2/organization')).status).toBe(401);
    });

    it('answers unknown routes, malformed JSON and malformed ids in the envelope', async () => {
      const unknown = await a.get('/api/v2/nothing-here');
      expect(unknown.status).toBe(404);
      expect(unknown.body.error.code).toBe('NOT_FOUND');
      const badJson = await a.post('/api/v2/projects').set('Content-Type', 'application/json').send('{"name": ');
      expect(badJson.status).toBe(400);
      expect(badJson.body.error.code).toBe('VALIDATION_ERROR');
      const badId = await a.get('/api/v2/projects/123');
      expect(badId.status).toBe(400);
      expect(badId.body.error.code).toBe('VALIDATION_ERROR');
    });

    it('serves health, readiness and the OpenAPI document without a key', async () => {
      expect((await raw().get('/healthz')).status).toBe(200);
      const ready = await raw().get('/readyz');
      expect(ready.status).toBe(200);
      expect(ready.body.data.checks).toMatchObject({ database: 'ok', nats: 'ok', documents: 'ok', ingestion: 'ok', retrieval: 'ok', check: 'ok', agent: 'ok' });
      const doc = await raw().get('/docs/openapi.json');
      expect(doc.status).toBe(200);
      expect(Object.keys(doc.body.paths)).toEqual(expect.arrayContaining(['/api/v2/projects', '/api/v2/documents/process', '/api/v2/check/verify']));
    });
  });

  describe('projects', () => {
    it('creates, reads, updates, lists and deletes a project', async () => {
      const created = await a.post('/api/v2/projects').send({ name: 'Bridge retrofit' });
      expect(created.status).toBe(201);
      const p = created.body.data;
      expect(p).toEqual({
        id: expect.any(String),
        org_id: org.orgId,
        name: 'Bridge retrofit',
        description: null,
        document_count: 0,
        created_at: expect.any(String),
        updated_at: expect.any(String),
      });
      const patched = await a.patch(`/api/v2/projects/${p.id}`).send({ description: 'Seismic upgrade' });
      expect(patched.body.data).toMatchObject({ name: 'Bridge retrofit', description: 'Seismic upgrade' });
      const cleared = await a.patch(`/api/v2/projects/${p.id}`).send({ description: null });
      expect(cleared.body.data.description).toBeNull();
      expect((await a.patch(`/api/v2/projects/${p.id}`).send({})).status).toBe(400);
      expect((await a.patch(`/api/v2/projects/${p.id}`).send({ description: 'x'.repeat(501) })).status).toBe(400);

      const second = (await a.post('/api/v2/projects').send({ name: 'Second' })).body.data;
      const list = await a.get('/api/v2/projects?limit=1');
      expect(list.body.pagination).toEqual({ limit: 1, offset: 0, total: 2 });
      expect(list.body.data[0].id).toBe(second.id);

      expect((await api(other.key).get(`/api/v2/projects/${p.id}`)).status).toBe(404);
      expect((await api(other.key).delete(`/api/v2/projects/${p.id}`)).status).toBe(404);
      const del = await a.delete(`/api/v2/projects/${p.id}`);
      expect(del.status).toBe(204);
      expect(del.text).toBe('');
      expect((await a.get(`/api/v2/projects/${p.id}`)).status).toBe(404);
    });

    it('rejects invalid names with VALIDATION_ERROR', async () => {
      for (const body of [{}, { name: '' }, { name: 'x'.repeat(201) }, { name: 42 }]) {
        const res = await a.post('/api/v2/projects').send(body);
        expect(res.status).toBe(400);
        expect(res.body.error.code).toBe('VALIDATION_ERROR');
      }
    });

    it('refuses to delete a project that still has documents', async () => {
      const p = (await a.post('/api/v2/projects').send({ name: 'With documents' })).body.data;
      await a.post('/api/v2/documents').send({ file_name: 'plan.txt', content_type: 'text/plain', size_bytes: 10, project_id: p.id });
      const res = await a.delete(`/api/v2/projects/${p.id}`);
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe('CONFLICT');
    });
  });

  describe('upload slots and processing', () => {
    it('reserves a slot with a presigned upload expiring in about 2 hours', async () => {
      const res = await a.post('/api/v2/documents').send({ file_name: 'Method statement.pdf', content_type: 'application/pdf', size_bytes: 1234 });
      expect(res.status).toBe(201);
      const d = res.body.data;
      expect(d).toMatchObject({
        org_id: org.orgId,
        project_id: null,
        file_name: 'Method statement.pdf',
        status: 'awaiting_upload',
        size_bytes: null,
        chunk_count: null,
        error_message: null,
      });
      expect(d.upload).toMatchObject({ method: 'PUT', recommended_content_type: 'application/pdf', url: expect.stringMatching(/^http/) });
      const ttl = Date.parse(d.upload.expires_at) - Date.now();
      expect(ttl).toBeGreaterThan(115 * 60_000);
      expect(ttl).toBeLessThan(125 * 60_000);
    });

    it('validates the reservation', async () => {
      const cases = [
        { file_name: 'a/b.pdf', content_type: 'application/pdf', size_bytes: 1 },
        { file_name: '', content_type: 'application/pdf', size_bytes: 1 },
        { file_name: 'x'.repeat(501), content_type: 'application/pdf', size_bytes: 1 },
        { file_name: 'a.pdf', content_type: 'application/pdf', size_bytes: 500 * 1024 * 1024 + 1 },
        { file_name: 'a.exe', content_type: 'application/x-msdownload', size_bytes: 1 },
      ];
      for (const body of cases) {
        const res = await a.post('/api/v2/documents').send(body);
        expect({ body, status: res.status, code: res.body.error?.code }).toEqual({ body, status: 400, code: 'VALIDATION_ERROR' });
      }
      const unsupported = await a.post('/api/v2/documents').send(cases[4]);
      expect(unsupported.body.error.message).toBe(
        "content_type 'application/x-msdownload' is not supported. Supported types: application/pdf, application/vnd.openxmlformats-officedocument.wordprocessingml.document, " +
          'application/vnd.openxmlformats-officedocument.presentationml.presentation, application/vnd.openxmlformats-officedocument.spreadsheetml.sheet, ' +
          'text/csv, text/plain, text/markdown, text/html, application/json, image/png, image/jpeg, image/tiff, application/vnd.oasis.opendocument.text.',
      );
      const foreignProject = (await api(other.key).post('/api/v2/projects').send({ name: 'theirs' })).body.data.id;
      const res = await a.post('/api/v2/documents').send({ file_name: 'a.pdf', content_type: 'application/pdf', size_bytes: 1, project_id: foreignProject });
      expect(res.status).toBe(404);
    });

    it('reports each skip reason of process', async () => {
      const reserve = async (name: string, size: number, type = 'text/plain') =>
        (await a.post('/api/v2/documents').send({ file_name: name, content_type: type, size_bytes: size })).body.data;
      const put = (slot: any, body: string, type: string) => fetch(slot.upload.url, { method: 'PUT', headers: { 'Content-Type': type }, body });

      const notUploaded = await reserve('never.txt', 5);
      const wrongSize = await reserve('size.txt', 999);
      await put(wrongSize, 'hello', 'text/plain');
      const wrongType = await reserve('type.txt', 5);
      await put(wrongType, 'hello', 'application/pdf');
      const good = await reserve('good.txt', 23);
      await put(good, 'Scaffold tags are green', 'text/plain');
      const missing = randomUUID();
      const theirs = (await api(other.key).post('/api/v2/documents').send({ file_name: 'x.txt', content_type: 'text/plain', size_bytes: 1 })).body.data.id;

      const res = await a
        .post('/api/v2/documents/process')
        .send({ document_ids: [notUploaded.id, wrongSize.id, wrongType.id, good.id, good.id, missing, theirs] });
      expect(res.status).toBe(200);
      expect(res.body.data.processed).toEqual([good.id]);
      expect(res.body.data.failed).toEqual([]);
      expect(res.body.data.skipped).toEqual([
        { document_id: notUploaded.id, reason: 'upload_not_found' },
        { document_id: wrongSize.id, reason: 'size_mismatch' },
        { document_id: wrongType.id, reason: 'content_type_mismatch' },
        { document_id: missing, reason: 'not_found' },
        { document_id: theirs, reason: 'not_found' },
      ]);
      const again = await a.post('/api/v2/documents/process').send({ document_ids: [good.id] });
      expect(again.body.data.skipped).toEqual([{ document_id: good.id, reason: 'not_awaiting_upload' }]);

      for (const body of [{}, { document_ids: [] }, { document_ids: ['nope'] }, { document_ids: Array.from({ length: 101 }, () => randomUUID()) }]) {
        expect((await a.post('/api/v2/documents/process').send(body)).status).toBe(400);
      }
    });

    it('answers 404 for a download whose file was never uploaded', async () => {
      const slot = (await a.post('/api/v2/documents').send({ file_name: 'ghost.pdf', content_type: 'application/pdf', size_bytes: 3 })).body.data;
      const res = await a.get(`/api/v2/documents/${slot.id}/download`);
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('NOT_FOUND');
    });

    it('enforces the presigned URL signature', async () => {
      const slot = (await a.post('/api/v2/documents').send({ file_name: 'sig.txt', content_type: 'text/plain', size_bytes: 5 })).body.data;
      const tampered = slot.upload.url.replace(/Signature=([0-9a-f])/, (_m: string, c: string) => `Signature=${c === '0' ? '1' : '0'}`);
      const res = await fetch(tampered, { method: 'PUT', headers: { 'Content-Type': 'text/plain' }, body: 'hello' });
      expect(res.status).toBe(403);
    });
  });
});

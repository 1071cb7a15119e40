import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import request from 'supertest';
import { api, baseUrl, kbctl, newOrg, waitForDocument } from './support/harness';

jest.setTimeout(180_000);

/**
 * Defects an outside probe found (issue 15): input that used to be accepted loosely, stored
 * unusably, or answered 500 or outside the envelope. Each case failed before its fix.
 */
describe('gateway hardening: what an adversarial probe broke', () => {
  let org: { orgId: string; key: string };
  let a: ReturnType<typeof api>;
  beforeAll(() => {
    org = newOrg('Hardening Org');
    a = api(org.key);
  });

  const expectValidation = (res: request.Response, pattern?: RegExp) => {
    expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status: 400, code: 'VALIDATION_ERROR' });
    if (pattern) expect(res.body.error.message).toMatch(pattern);
  };

  // Defect 2: names a download could never carry in Content-Disposition.
  it('refuses blank file names and names with control characters at reservation, saying why', async () => {
    const reserve = (file_name: string) => a.post('/api/v2/documents').send({ file_name, content_type: 'text/plain', size_bytes: 5 });
    for (const name of [' ', '   ', '\t']) expectValidation(await reserve(name), /blank/);
    for (const name of ['a\r\nb.txt', 'bell\u0007.txt', 'tab\there.txt', 'del\u007f.txt', 'c1\u0085.txt'])
      expectValidation(await reserve(name), /control character/);
    // NUL is refused for every text field (defect 3), with a message that says so.
    const nul = await reserve('nul\u0000.txt');
    expectValidation(nul, /NUL/);
    expect(nul.body.error.message).not.toMatch(/separator/);
    expectValidation(await reserve('dir/a.txt'), /separator/);
  });

  it('downloads a document whose name mixes scripts, quotes and spaces', async () => {
    const name = ' Prüfbericht "Q3"; 日本語 – résumé .txt';
    const slot = (await a.post('/api/v2/documents').send({ file_name: name, content_type: 'text/plain', size_bytes: 5 })).body.data;
    expect((await fetch(slot.upload.url, { method: 'PUT', headers: { 'Content-Type': 'text/plain' }, body: 'hello' })).status).toBe(200);
    const d = await a.get(`/api/v2/documents/${slot.id}/download`);
    expect(d.status).toBe(200);
    expect(d.body.data.file_name).toBe(name);
    const res = await fetch(d.body.data.download_url);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('hello');
    expect(res.headers.get('content-disposition')).toContain(encodeURIComponent('日本語'));
  });

  // Defect 3: client input that reached PostgreSQL or protobuf and came back as 500.
  it('answers offset ≥ 2^31 on every list endpoint with 400, and the largest offset with an empty page', async () => {
    for (const path of ['/api/v2/documents', '/api/v2/projects', '/api/v2/check/runs', '/api/v2/agent/batches']) {
      for (const offset of ['2147483648', '4294967296', '9007199254740993']) expectValidation(await a.get(`${path}?offset=${offset}`), /offset/);
      const last = await a.get(`${path}?offset=2147483647`);
      expect({ path, status: last.status, data: last.body.data }).toEqual({ path, status: 200, data: [] });
    }
  });

  it('refuses NUL characters and lone surrogates in text fields with 400 naming the field', async () => {
    expectValidation(await a.post('/api/v2/projects').send({ name: 'a\u0000b' }), /name/);
    expectValidation(await a.post('/api/v2/projects').send({ name: 'ok', description: 'x\u0000' }), /description/);
    // A lone surrogate cannot be stored or sent as UTF-8: refused, not silently replaced.
    expectValidation(await a.post('/api/v2/projects').send({ name: 'bad \ud800 text' }), /name/);
    const project = (await a.post('/api/v2/projects').send({ name: 'Hardening' })).body.data;
    expectValidation(await a.patch(`/api/v2/projects/${project.id}`).send({ name: '\u0000' }), /name/);
    expectValidation(await a.post('/api/v2/check/verify').send({ project_id: project.id, requirement: 'must \u0000 hold' }), /requirement/);
    expectValidation(
      await a.post('/api/v2/check/runs').send({ project_id: project.id, name: 'r', requirements: [{ text: 'x\u0000' }] }),
      /requirements\[0\]\.text/,
    );
    expectValidation(
      await a.post('/api/v2/check/runs').send({ project_id: project.id, name: 'r', requirements: [{ text: 'x', metadata: { 'k\u0000': 1 } }] }),
      /metadata/,
    );
    expectValidation(await a.post('/api/v2/agent/batches').send({ questions: ['fine', 'bad\u0000'] }), /questions\[1\]/);
    expectValidation(await a.post('/api/v2/agent/query').send({ question: 'what\u0000?' }), /question/);
  });

  it('drops unknown keys whatever they hold: a NUL or a lone surrogate there is not refused (issue 29 defect 10)', async () => {
    // Schema-valid bodies (the document allows extra keys) with unknown keys holding what a text
    // field may not: they are dropped like any unknown key, and the request succeeds.
    const created = await a.post('/api/v2/projects').send({ name: 'Unknown keys', 'x\u0000y': 'a\u0000b', extra: { 'k\u0000': ['\ud800'] } });
    expect([created.status, created.body.data.name, Object.keys(created.body.data)]).toEqual([
      201,
      'Unknown keys',
      expect.not.arrayContaining(['x\u0000y', 'extra']),
    ]);
    const renamed = await a.patch(`/api/v2/projects/${created.body.data.id}`).send({ name: 'Renamed', '\u0000': null });
    expect([renamed.status, renamed.body.data.name]).toEqual([200, 'Renamed']);
    // Inside a nested object the API reads (a requirement), an unknown key is dropped too ...
    const run = await a
      .post('/api/v2/check/runs')
      .send({ project_id: created.body.data.id, name: 'r', requirements: [{ text: 'x', 'n\u0000': [['\u0000']] }] });
    expect(run.status).toBe(201);
    // ... while a free-form object that is kept (metadata) still refuses such a key.
    expectValidation(
      await a.post('/api/v2/check/runs').send({ project_id: created.body.data.id, name: 'r', requirements: [{ text: 'x', metadata: { 'k\u0000': 1 } }] }),
      /metadata/,
    );
  });

  // Defect 4: loose parsing.
  it('does not rename a project to "null" and reads only decimal integers as limit/offset', async () => {
    const project = (await a.post('/api/v2/projects').send({ name: 'Keep my name' })).body.data;
    expectValidation(await a.patch(`/api/v2/projects/${project.id}`).send({ name: null }), /name/);
    expect((await a.get(`/api/v2/projects/${project.id}`)).body.data.name).toBe('Keep my name');
    for (const value of ['1e2', '0x10', ' 5', '5 ', '+5', '5.0', '0b11', '']) {
      expectValidation(await a.get(`/api/v2/projects?limit=${encodeURIComponent(value)}`), /limit/);
      expectValidation(await a.get(`/api/v2/documents?offset=${encodeURIComponent(value)}`), /offset/);
    }
    const ok = await a.get('/api/v2/projects?limit=007&offset=0');
    expect(ok.status).toBe(200);
    expect(ok.body.pagination).toMatchObject({ limit: 7, offset: 0 });
  });

  it('refuses empty items in document_ids instead of listing every document', async () => {
    const id = '6f1c2a9e-0000-4000-8000-000000000000';
    for (const value of [',', '', ' ', `${id},`, `,${id}`, `${id},,${id}`])
      expectValidation(await a.get(`/api/v2/documents?document_ids=${encodeURIComponent(value)}`), /document_ids/);
    const one = await a.get(`/api/v2/documents?document_ids=${id}`);
    expect({ status: one.status, data: one.body.data }).toEqual({ status: 200, data: [] });
  });

  it('treats project_id: null at reservation as omitted (an organization-level document)', async () => {
    const res = await a.post('/api/v2/documents').send({ file_name: 'org-level.txt', content_type: 'text/plain', size_bytes: 5, project_id: null });
    expect(res.status).toBe(201);
    expect(res.body.data.project_id).toBeNull();
  });

  // Defect 5: Fastify's own 431 body.
  it('answers a request line over the header limit with 431 in the envelope', async () => {
    const res = await fetch(`${baseUrl()}/api/v2/projects?q=${'x'.repeat(20_000)}`, { headers: { Authorization: `Bearer ${org.key}` } });
    expect(res.status).toBe(431);
    const body = (await res.json()) as { request_id: string };
    expect(body).toEqual({
      success: false,
      error: { code: 'VALIDATION_ERROR', message: expect.stringMatching(/16 KiB|16,384/) },
      request_id: expect.any(String),
    });
    expect(res.headers.get('x-request-id')).toBe(body.request_id);
    // The connection was closed by the server; the next request on a new one is served normally.
    expect((await a.get('/api/v2/projects?limit=1')).status).toBe(200);
  });

  // Defect 6: browser uploads need a CORS preflight on the storage path.
  it('answers a CORS preflight to an upload URL, and the upload itself carries the CORS header', async () => {
    const slot = (await a.post('/api/v2/documents').send({ file_name: 'browser.txt', content_type: 'text/plain', size_bytes: 5 })).body.data;
    const preflight = await fetch(slot.upload.url, {
      method: 'OPTIONS',
      headers: { Origin: 'https://app.example', 'Access-Control-Request-Method': 'PUT', 'Access-Control-Request-Headers': 'content-type' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('*');
    expect(preflight.headers.get('access-control-allow-methods')).toContain('PUT');
    expect(preflight.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('content-type');
    const put = await fetch(slot.upload.url, { method: 'PUT', headers: { Origin: 'https://app.example', 'Content-Type': 'text/plain' }, body: 'hello' });
    expect(put.status).toBe(200);
    expect(put.headers.get('access-control-allow-origin')).toBe('*');
  });

  // Defect 1: an upload URL stayed writable after its slot was used.
  it('closes the upload URL once the document is processed: a late PUT neither replaces nor changes what was processed', async () => {
    const slot = (await a.post('/api/v2/documents').send({ file_name: 'slot.txt', content_type: 'text/plain', size_bytes: 44 })).body.data;
    // The slot's object key is per reservation and unguessable, not derived from the document id alone.
    expect(new URL(slot.upload.url).pathname).toMatch(new RegExp(`/uploads/${slot.id}/[0-9a-f]{32}$`));
    const original = 'The crane must be inspected before each shift';
    const put = await fetch(slot.upload.url, { method: 'PUT', headers: { 'Content-Type': 'text/plain' }, body: original.slice(0, 44) });
    expect(put.status).toBe(200);
    expect((await a.post('/api/v2/documents/process').send({ document_ids: [slot.id] })).body.data.processed).toEqual([slot.id]);
    const late = await fetch(slot.upload.url, { method: 'PUT', headers: { 'Content-Type': 'text/plain' }, body: 'REPLACED' });
    expect(late.status).toBe(403);
    const doc = await waitForDocument(org.key, slot.id);
    expect(doc).toMatchObject({ status: 'completed', size_bytes: 44 });
    expect((await fetch(slot.upload.url, { method: 'PUT', headers: { 'Content-Type': 'text/plain' }, body: 'REPLACED' })).status).toBe(403);
    const d = (await a.get(`/api/v2/documents/${slot.id}/download`)).body.data;
    expect(await (await fetch(d.download_url)).text()).toBe(original.slice(0, 44));
    expect(d.size_bytes).toBe(44);
  });

  it('closes the upload URL of a deleted document: a late PUT recreates nothing', async () => {
    const objects = path.join(process.env.KB_E2E_DATA_DIR!, 'objects', 'objects', 'uploads');
    const uploaded = (await a.post('/api/v2/documents').send({ file_name: 'gone.txt', content_type: 'text/plain', size_bytes: 5 })).body.data;
    expect((await fetch(uploaded.upload.url, { method: 'PUT', headers: { 'Content-Type': 'text/plain' }, body: 'hello' })).status).toBe(200);
    const never = (await a.post('/api/v2/documents').send({ file_name: 'never.txt', content_type: 'text/plain', size_bytes: 5 })).body.data;
    expect((await a.delete('/api/v2/documents').send({ document_ids: [uploaded.id, never.id] })).body.data.deleted.sort()).toEqual(
      [uploaded.id, never.id].sort(),
    );
    for (const slot of [uploaded, never]) {
      const late = await fetch(slot.upload.url, { method: 'PUT', headers: { 'Content-Type': 'text/plain' }, body: 'hello' });
      expect(late.status).toBe(403);
      const dir = path.join(objects, slot.id);
      expect(readdirSafe(dir)).toEqual([]);
    }
  });
});

/**
 * Round two (issue 29): loose readings of input a second outside probe found. Each case failed
 * before its fix.
 */
describe('gateway hardening, round two', () => {
  let org: { orgId: string; key: string };
  let a: ReturnType<typeof api>;
  beforeAll(() => {
    org = newOrg('Hardening Two Org');
    a = api(org.key);
  });

  const expectValidation = (res: request.Response, pattern?: RegExp) => {
    expect({ status: res.status, code: res.body?.error?.code, message: res.body?.error?.message }).toEqual({
      status: 400,
      code: 'VALIDATION_ERROR',
      message: expect.anything(),
    });
    if (pattern) expect(res.body.error.message).toMatch(pattern);
  };
  const projectId = '0b6f3f1e-8a51-4a4e-9f37-2f7d6c1f4a10';

  // Defect 2: an item of a list of objects that is itself an array was stored as the text "undefined".
  it('refuses a list item that is not an object (requirements, messages, questions), naming the item', async () => {
    expectValidation(
      await a.post('/api/v2/check/runs').send({ project_id: projectId, name: 'Run', requirements: [[]] }),
      /requirements\[0\] must be a JSON object/,
    );
    expectValidation(
      await a.post('/api/v2/check/runs').send({ project_id: projectId, name: 'Run', requirements: [{ text: 'fine' }, [{ text: 'x' }]] }),
      /requirements\[1\] must be a JSON object/,
    );
    expectValidation(await a.post('/api/v2/check/runs').send({ project_id: projectId, name: 'Run', requirements: [null] }), /requirements\[0\]/);
    expectValidation(await a.post('/api/v2/chat').send({ messages: [[]] }), /messages\[0\] must be a JSON object/);
    expectValidation(await a.post('/api/v2/agent/batches').send({ questions: [[]] }), /questions/);
    expectValidation(await a.post('/api/v2/agent/batches').send({ questions: [['nested?']] }), /questions/);
  });

  // Defect 3: an optional field sent as null reached the service as the text "null".
  it('reads null as omitted for optional fields instead of storing the text "null"', async () => {
    const batch = await a.post('/api/v2/agent/batches').send({ questions: ['Are hard hats required?'], name: null, project_id: null, chat_type: null });
    expect(batch.status).toBe(201);
    expect(batch.body.data.name).not.toBe('null');
    expect(batch.body.data.project_id ?? null).toBeNull();
    const query = await a.post('/api/v2/agent/query').send({ question: 'Are hard hats required?', project_id: null, chat_type: null });
    expect(query.status).toBe(200);
    const chat = await a.post('/api/v2/chat').send({ messages: [{ role: 'user', content: 'Are hard hats required?' }], project_id: null, chat_type: null });
    expect(chat.status).toBe(200);
    const hook = await a.post('/api/v2/webhooks').send({ url: 'http://127.0.0.1:9/kb-null', events: ['document.completed'], description: null });
    expect(hook.status).toBe(201);
    expect(hook.body.data.description).toBeNull();
  });

  // Defect 4: "7" and true were read as numbers; limit[]=1 was dropped and the default used.
  it('refuses a non-integer JSON value for an integer field and an array for a query parameter, on every endpoint', async () => {
    for (const top_k of [true, '7', 7.5, [7], { n: 7 }]) {
      expectValidation(await a.post('/api/v2/agent/query').send({ question: 'Are hard hats required?', top_k }), /top_k must be an integer/);
      expectValidation(await a.post('/api/v2/chat').send({ messages: [{ role: 'user', content: 'Hi?' }], top_k }), /top_k must be an integer/);
    }
    expectValidation(await a.post('/api/v2/documents').send({ file_name: 'a.txt', content_type: 'text/plain', size_bytes: '5' }), /size_bytes/);
    for (const [path, query, name] of [
      ['/api/v2/projects', 'limit[]=1', 'limit'],
      ['/api/v2/projects', 'limit=1&limit=2', 'limit'],
      ['/api/v2/documents', 'offset[0]=1', 'offset'],
      ['/api/v2/documents', 'status=completed&status=failed', 'status'],
      ['/api/v2/check/runs', 'project_id[]=' + projectId, 'project_id'],
      ['/api/v2/agent/batches', 'limit=5&limit=5', 'limit'],
      ['/api/v2/webhooks', 'limit[]=1', 'limit'],
    ]) {
      expectValidation(await a.get(`${path}?${query}`), new RegExp(`^${name} must be given once`));
    }
    const ok = await a.get('/api/v2/projects?limit=1');
    expect({ status: ok.status, limit: ok.body.pagination?.limit }).toEqual({ status: 200, limit: 1 });
  });

  // Defect 6: invalid UTF-8 in a JSON body was stored as U+FFFD.
  it('refuses a JSON body that is not valid UTF-8, and keeps valid multi-byte text exactly', async () => {
    const post = (bytes: Buffer) =>
      fetch(`${baseUrl()}/api/v2/projects`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${org.key}`, 'Content-Type': 'application/json' },
        body: bytes,
      });
    for (const bad of [Buffer.from([0xc3, 0x28]), Buffer.from([0xff]), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from([0xe2, 0x82])]) {
      const res = await post(Buffer.concat([Buffer.from('{"name":"bad '), bad, Buffer.from('"}')]));
      const body = (await res.json()) as any;
      expect({ status: res.status, code: body.error?.code }).toEqual({ status: 400, code: 'VALIDATION_ERROR' });
      expect(body.error.message).toMatch(/UTF-8/);
    }
    const good = await post(Buffer.from('{"name":"Prüfung 日本 🏗"}', 'utf8'));
    expect(good.status).toBe(201);
    expect(((await good.json()) as any).data.name).toBe('Prüfung 日本 🏗');
  });

  // Defect 9: an out-of-range --rate-limit reached PostgreSQL (INTERNAL_ERROR, SQL and a stack trace on stdout).
  it('kbctl refuses numbers outside the column range with one VALIDATION_ERROR line on stdout', () => {
    const kbctlRaw = (...args: string[]) =>
      spawnSync(process.execPath, [path.join(__dirname, '../../dist/apps/gateway/src/cli/kbctl.js'), ...args, '--json'], {
        env: { ...process.env, DATABASE_URL: process.env.KB_E2E_DATABASE_URL, NATS_URL: process.env.KB_E2E_NATS_URL ?? '' },
        encoding: 'utf8',
      });
    for (const [args, flag] of [
      [['key', 'create', '--org', org.orgId, '--rate-limit', '2147483648'], '--rate-limit'],
      [['key', 'create', '--org', org.orgId, '--rate-limit', '0'], '--rate-limit'],
      [['key', 'create', '--org', org.orgId, '--rate-limit', '1e3'], '--rate-limit'],
      [['key', 'create', '--org', org.orgId, '--rate-limit', '-5'], '--rate-limit'],
      [['org', 'quota', '--org', org.orgId, '--requests', '9223372036854775808'], '--requests'],
      [['org', 'quota', '--org', org.orgId, '--tokens', '0x10'], '--tokens'],
    ] as Array<[string[], string]>) {
      const run = kbctlRaw(...args);
      expect({ args, status: run.status }).toEqual({ args, status: 1 });
      const lines = run.stdout.trim().split('\n');
      expect(lines).toHaveLength(1);
      const out = JSON.parse(lines[0]);
      expect(out.error.code).toBe('VALIDATION_ERROR');
      expect(out.error.message).toContain(flag);
    }
    expect(kbctl('key', 'create', '--org', org.orgId, '--rate-limit', '2147483647').rate_limit_per_minute).toBe(2147483647);
  });

  // Defect 12: a PUT far larger than the declared size_bytes was stored until process said size_mismatch.
  it('caps a presigned upload at the declared size: 413 EntityTooLarge, nothing stored, the right size still fits', async () => {
    const slot = (await a.post('/api/v2/documents').send({ file_name: 'five.txt', content_type: 'text/plain', size_bytes: 5 })).body.data;
    const put = (body: any, extra: RequestInit = {}) => fetch(slot.upload.url, { method: 'PUT', headers: { 'Content-Type': 'text/plain' }, body, ...extra });
    const big = await put(Buffer.alloc(20 * 1024 * 1024, 0x61));
    expect(big.status).toBe(413);
    expect(((await big.json()) as any).error.code).toBe('EntityTooLarge');
    expect((await put('hello!')).status).toBe(413);
    // Without Content-Length (chunked): refused once the sixth byte arrives.
    const chunks = new ReadableStream({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('hel'));
        controller.enqueue(new TextEncoder().encode('lo, world'));
        controller.close();
      },
    });
    expect((await put(chunks, { duplex: 'half' })).status).toBe(413);
    const dir = path.join(process.env.KB_E2E_DATA_DIR!, 'objects', 'objects', 'uploads', slot.id);
    expect(readdirSafe(dir).filter((f) => !f.startsWith('.'))).toEqual([]);
    expect((await put('hello')).status).toBe(200);
    expect((await a.post('/api/v2/documents/process').send({ document_ids: [slot.id] })).body.data.processed).toEqual([slot.id]);
    expect(await waitForDocument(org.key, slot.id)).toMatchObject({ status: 'completed', size_bytes: 5 });
  });

  // Defect 14: a blank question got chat's wording ("last message…").
  it('refuses a blank agent/query question with its own wording', async () => {
    for (const question of [' ', '\t\n ']) {
      const res = await a.post('/api/v2/agent/query').send({ question });
      expectValidation(res, /^question must not be blank/);
      expect(res.body.error.message).not.toMatch(/last message/);
    }
  });

  // Defect 14: CONNECT (Node's `connect` event, never seen by Fastify) closed the connection with no answer.
  it('answers CONNECT with 405 in the envelope and Allow, whether its target is a host or a served path', async () => {
    const connect = (target: string) =>
      new Promise<string>((resolve, reject) => {
        const url = new URL(baseUrl());
        const socket = net.connect(Number(url.port), url.hostname, () => socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${url.host}\r\n\r\n`));
        let text = '';
        socket.setEncoding('utf8').on('data', (d) => (text += d));
        socket.once('close', () => resolve(text));
        socket.once('error', reject);
      });
    for (const [target, allow] of [
      ['example.com:443', 'GET, HEAD, POST, PUT, PATCH, DELETE'],
      ['/api/v2/projects', 'GET, HEAD, POST'],
    ]) {
      const answer = await connect(target);
      const [head, body] = answer.split('\r\n\r\n');
      expect(head).toMatch(/^HTTP\/1\.1 405 Method Not Allowed\r\n/);
      expect(head).toContain(`\r\nAllow: ${allow}\r\n`);
      const id = /\r\nX-Request-Id: (\S+)/.exec(head)?.[1];
      expect(JSON.parse(body)).toEqual({
        success: false,
        error: { code: 'METHOD_NOT_ALLOWED', message: expect.stringContaining('not a proxy') },
        request_id: id,
      });
    }
  });
});

function readdirSafe(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

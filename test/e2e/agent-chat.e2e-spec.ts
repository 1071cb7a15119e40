import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { api, baseUrl, corpusFile, kbctl, newOrg, ROOT, streamChat, uploadFile, waitForDocument } from './support/harness';

jest.setTimeout(300_000);

const SAMPLES = path.join(ROOT, 'samples/safety-corpus');

/** `kbctl safety load` against the suite's stack (documents address from the stack's data dir). */
function safetyLoad(folder: string, ...flags: string[]): any {
  const out = execFileSync(process.execPath, [path.join(ROOT, 'dist/apps/gateway/src/cli/kbctl.js'), 'safety', 'load', folder, ...flags, '--json'], {
    env: { ...process.env, DATABASE_URL: process.env.KB_E2E_DATABASE_URL!, KB_DATA_DIR: process.env.KB_E2E_DATA_DIR! },
    encoding: 'utf8',
  });
  return JSON.parse(out);
}

const markers = (text: string) => [...new Set([...text.matchAll(/\[(\d+)\]/g)].map((m) => Number(m[1])))].sort((x, y) => x - y);

describe('agent: safety corpus, routing, chat with SSE', () => {
  const safetyOrg = newOrg('E2E Agent Safety', { safety: true });
  const plainOrg = newOrg('E2E Agent Plain');
  const s = api(safetyOrg.key);
  const p = api(plainOrg.key);
  let projectId: string;
  let firstLoad: any;

  beforeAll(async () => {
    firstLoad = safetyLoad(SAMPLES);
    const res = await p.post('/api/v2/projects').send({ name: 'Agent project' });
    projectId = res.body.data.id;
    const id = await uploadFile(plainOrg.key, { path: corpusFile('markdown/datica_11-incident_response_policy.md') }, projectId);
    await p.post('/api/v2/documents/process').send({ document_ids: [id] });
    expect((await waitForDocument(plainOrg.key, id)).status).toBe('completed');
  });

  it('kbctl safety load ingests every sample page, and loading again replaces instead of duplicating', async () => {
    expect(firstLoad.loaded.length).toBeGreaterThanOrEqual(7);
    for (const d of firstLoad.loaded) expect({ file: d.file_name, status: d.status }).toEqual({ file: d.file_name, status: 'completed' });
    const second = safetyLoad(SAMPLES);
    expect(second.loaded.map((d: any) => d.replaced)).toEqual(second.loaded.map(() => 1));
    const current = new Set(second.loaded.map((d: any) => d.document_id));
    // Ask about each page: every citation is from the current load, never from the replaced one.
    const res = await s.post('/api/v2/agent/query').send({ question: 'How high must the top rail of a guardrail be?', chat_type: 'safety', top_k: 20 });
    expect(res.status).toBe(200);
    expect(res.body.data.citations.length).toBeGreaterThan(0);
    for (const c of res.body.data.citations) expect(current.has(c.document_id)).toBe(true);
    const quotes = res.body.data.citations.map((c: any) => c.quote);
    expect(new Set(quotes).size).toBe(quotes.length);
  });

  it('kbctl safety load rejects a folder that does not exist with a JSON error', () => {
    let out = '';
    try {
      safetyLoad('/nonexistent/folder');
    } catch (e: any) {
      out = e.stdout;
    }
    expect(JSON.parse(out).error.code).toBe('VALIDATION_ERROR');
  });

  it('safety answers cite the shipped corpus with verbatim quotes and matching markers', async () => {
    const res = await s.post('/api/v2/agent/query').send({ question: 'At what height above a lower level is fall protection required?', chat_type: 'safety' });
    expect(res.status).toBe(200);
    const d = res.body.data;
    expect(d.agent).toBe('safety');
    expect(d.model).toBe('embedded-extractive');
    expect(d.citations.some((c: any) => c.file_name === '01-fall-protection.md' && c.quote.includes('6 feet'))).toBe(true);
    expect(markers(d.answer)).toEqual(d.citations.map((c: any) => c.index));
    for (const c of d.citations) expect(d.answer).toContain(c.quote.replace(/\s+/g, ' ').trim());
    expect(d.usage.total_tokens).toBeGreaterThan(0);
  });

  it('safety is 403 AGENT_NOT_ENABLED for an org without the Safety Assistant, for query, chat and streamed chat', async () => {
    const q = await p.post('/api/v2/agent/query').send({ question: 'ladder height?', chat_type: 'safety' });
    expect([q.status, q.body.error.code]).toEqual([403, 'AGENT_NOT_ENABLED']);
    const c = await p.post('/api/v2/chat').send({ messages: [{ role: 'user', content: 'ladder height?' }], chat_type: 'safety' });
    expect([c.status, c.body.error.code]).toEqual([403, 'AGENT_NOT_ENABLED']);
    const st = await streamChat(plainOrg.key, { messages: [{ role: 'user', content: 'ladder height?' }], chat_type: 'safety' });
    expect(st.res.status).toBe(403);
    expect(st.res.headers.get('content-type')).toContain('application/json');
    expect(st.json.error.code).toBe('AGENT_NOT_ENABLED');
  });

  it('routes an omitted chat_type: safety when enabled and on topic, else project, else general', async () => {
    const ask = async (key: string, content: string, extra: object = {}) =>
      (
        await api(key)
          .post('/api/v2/chat')
          .send({ messages: [{ role: 'user', content }], ...extra })
      ).body.data.agent;
    expect(await ask(safetyOrg.key, 'How far must a ladder extend above the landing?')).toBe('safety');
    expect(await ask(safetyOrg.key, 'When do we notify customers about a security incident?')).toBe('general');
    expect(await ask(plainOrg.key, 'How far must a ladder extend above the landing?')).toBe('general');
    expect(await ask(plainOrg.key, 'Who leads the incident response team?', { project_id: projectId })).toBe('project');
  });

  it("routes a safety-sounding question about the organization's own documents to them (routing by evidence), else to the safety corpus", async () => {
    // The README's demo: an org with the Safety Assistant on uploads OSHA2001.pdf and asks about it.
    const org = newOrg('E2E Agent Evidence Routing', { safety: true });
    const o = api(org.key);
    const id = await uploadFile(org.key, { path: corpusFile('pdf/OSHA2001.pdf') });
    await o.post('/api/v2/documents/process').send({ document_ids: [id] });
    expect((await waitForDocument(org.key, id)).status).toBe('completed');
    const own = await o.post('/api/v2/agent/query').send({ question: 'Must employers notify employees exposed to toxic materials?' });
    expect(own.status).toBe(200);
    expect(own.body.data.agent).toBe('general');
    expect(own.body.data.citations.length).toBeGreaterThan(0);
    for (const c of own.body.data.citations) expect(c.file_name).toBe('OSHA2001.pdf');
    // The same question in chat (streamed or not) follows the same rule.
    const chat = await o.post('/api/v2/chat').send({ messages: [{ role: 'user', content: 'Must employers notify employees exposed to toxic materials?' }] });
    expect(chat.body.data.agent).toBe('general');
    // A safety question its documents do not answer still goes to the shared corpus.
    const ladder = await o.post('/api/v2/agent/query').send({ question: 'How far must ladder side rails extend above the upper landing?' });
    expect(ladder.body.data.agent).toBe('safety');
    expect(ladder.body.data.citations[0].file_name).toMatch(/ladder/);
    // An explicit chat_type is never overridden by evidence.
    const forced = await o.post('/api/v2/agent/query').send({ question: 'Must employers notify employees exposed to toxic materials?', chat_type: 'safety' });
    expect(forced.body.data.agent).toBe('safety');
  });

  it('understands a follow-up from the conversation (the retrieval query is rewritten)', async () => {
    const res = await s.post('/api/v2/chat').send({
      chat_type: 'safety',
      messages: [
        { role: 'user', content: 'How wide must a scaffold platform be?' },
        { role: 'assistant', content: 'A working platform must be at least 18 inches wide [1].' },
        { role: 'user', content: 'And how often must it be inspected?' },
      ],
    });
    expect(res.status).toBe(200);
    const d = res.body.data;
    expect(d.message.role).toBe('assistant');
    expect(d.citations[0].file_name).toBe('02-scaffolds.md');
    expect(d.message.content).toMatch(/before each work shift/);
  });

  it('project chat searches only the project scope; a foreign project is 404', async () => {
    const res = await p
      .post('/api/v2/chat')
      .send({ chat_type: 'project', project_id: projectId, messages: [{ role: 'user', content: 'Who is on the incident response team?' }] });
    expect(res.status).toBe(200);
    expect(res.body.data.agent).toBe('project');
    expect(res.body.data.citations.length).toBeGreaterThan(0);
    for (const c of res.body.data.citations) expect(c.file_name).toBe('datica_11-incident_response_policy.md');
    const foreign = await s
      .post('/api/v2/chat')
      .send({ chat_type: 'project', project_id: projectId, messages: [{ role: 'user', content: 'incident response team' }] });
    expect(foreign.status).toBe(404);
  });

  it('validates chat input with the JSON envelope', async () => {
    const cases: object[] = [
      { messages: [] },
      { messages: [{ role: 'assistant', content: 'hi' }] },
      { messages: [{ role: 'system', content: 'hi' }] },
      { messages: [{ role: 'user', content: 'x'.repeat(8001) }] },
      { messages: [{ role: 'user', content: 'hi' }], chat_type: 'legal' },
      { messages: [{ role: 'user', content: 'hi' }], chat_type: 'project' },
      { messages: [{ role: 'user', content: 'hi' }], stream: 'yes' },
    ];
    for (const body of cases) {
      const res = await s.post('/api/v2/chat').send(body);
      expect({ body, status: res.status, code: res.body.error?.code }).toEqual({ body, status: 400, code: 'VALIDATION_ERROR' });
    }
  });

  it('streams SSE in the documented order; the deltas add up to the JSON answer', async () => {
    const body = { chat_type: 'safety', messages: [{ role: 'user', content: 'How far must ladder side rails extend above the upper landing?' }] };
    const json = (await s.post('/api/v2/chat').send(body)).body.data;
    const { res, events } = await streamChat(safetyOrg.key, body);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const names = events.map((e) => e.event);
    expect(names[0]).toBe('meta');
    expect(names.slice(-2)).toEqual(['citations', 'done']);
    expect(names.slice(1, -2).every((n) => n === 'delta')).toBe(true);
    expect(names.length).toBeGreaterThan(3);
    const meta = JSON.parse(events[0].data);
    expect(meta).toEqual({ agent: 'safety', model: 'embedded-extractive', request_id: res.headers.get('x-request-id') });
    const text = events
      .filter((e) => e.event === 'delta')
      .map((e) => JSON.parse(e.data).content)
      .join('');
    expect(text).toBe(json.message.content);
    expect(text).toMatch(/3 feet/);
    const citations = JSON.parse(events[names.indexOf('citations')].data).citations;
    expect(citations).toEqual(json.citations);
    expect(markers(text)).toEqual(citations.map((c: any) => c.index));
    const done = JSON.parse(events[names.length - 1].data);
    expect(done.finish_reason).toBe('stop');
    expect(done.usage.total_tokens).toBe(json.usage.total_tokens);
  });

  it('a client that disconnects mid-stream leaves the service healthy for the next stream', async () => {
    const body = { chat_type: 'safety', messages: [{ role: 'user', content: 'What are the allowed slopes for excavations in Type C soil?' }] };
    const cut = await streamChat(safetyOrg.key, body, { abortAfter: 'meta' });
    expect(cut.events[0].event).toBe('meta');
    const again = await streamChat(safetyOrg.key, body);
    expect(again.events.map((e) => e.event).slice(-1)).toEqual(['done']);
  });

  it('answers plainly with no citations when nothing relevant is found', async () => {
    const res = await s.post('/api/v2/agent/query').send({ question: 'What is the airspeed velocity of an unladen swallow?', chat_type: 'safety' });
    expect(res.status).toBe(200);
    expect(res.body.data.citations).toEqual([]);
    expect(res.body.data.answer).toMatch(/No relevant information/);
  });

  it('every agent route is in the OpenAPI document', async () => {
    const doc: any = await (await fetch(`${baseUrl()}/docs/openapi.json`)).json();
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        '/api/v2/agent/query',
        '/api/v2/chat',
        '/api/v2/agent/batches',
        '/api/v2/agent/batches/{id}',
        '/api/v2/agent/batches/{id}/export',
      ]),
    );
    expect(kbctl('org', 'safety', '--org', plainOrg.orgId, '--off').safety_assistant_enabled).toBe(false);
  });
});

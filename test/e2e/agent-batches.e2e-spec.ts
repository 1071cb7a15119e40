import { parse } from 'csv-parse/sync';
import { api, baseUrl, corpusFile, newOrg, uploadFile, waitForDocument } from './support/harness';

jest.setTimeout(300_000);

async function waitForBatch(key: string, id: string, timeoutMs = 120_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await api(key).get(`/api/v2/agent/batches/${id}`);
    if (['completed', 'failed'].includes(res.body.data?.status)) return res.body.data;
    if (Date.now() > deadline) throw new Error(`batch ${id} still ${res.body.data?.status}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function exportCsv(key: string, id: string) {
  const res = await fetch(`${baseUrl()}/api/v2/agent/batches/${id}/export`, { headers: { Authorization: `Bearer ${key}` } });
  const text = await res.text();
  return { res, text, rows: res.status === 200 ? parse<Record<string, string>>(text, { columns: true }) : [] };
}

describe('agent batches', () => {
  const org = newOrg('E2E Batches');
  const other = newOrg('E2E Batches Other');
  const a = api(org.key);
  let projectId: string;
  let otherProjectId: string;

  const QUESTIONS = [
    'What triggers activation of the incident response plan?',
    'Who is notified when a security incident is confirmed, "and how"?',
    'Describe the quantum chromodynamics of gluon fields,\nin two lines.',
  ];

  beforeAll(async () => {
    projectId = (await a.post('/api/v2/projects').send({ name: 'Batch project' })).body.data.id;
    otherProjectId = (await a.post('/api/v2/projects').send({ name: 'Other project' })).body.data.id;
    const id = await uploadFile(org.key, { path: corpusFile('markdown/datica_11-incident_response_policy.md') }, projectId);
    await a.post('/api/v2/documents/process').send({ document_ids: [id] });
    expect((await waitForDocument(org.key, id)).status).toBe('completed');
  });

  it('creates a pending batch, answers every question in the background and exports RFC 4180 CSV', async () => {
    const created = await a.post('/api/v2/agent/batches').send({ questions: QUESTIONS, name: 'IR review', project_id: projectId, chat_type: 'project' });
    expect(created.status).toBe(201);
    const b = created.body.data;
    expect(b).toEqual({
      id: expect.any(String),
      name: 'IR review',
      org_id: org.orgId,
      project_id: projectId,
      chat_type: 'project',
      status: 'pending',
      total_questions: 3,
      processed_questions: 0,
      failed_questions: 0,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });

    const done = await waitForBatch(org.key, b.id);
    expect(done.status).toBe('completed');
    expect(done.results.map((r: any) => r.error)).toEqual([null, null, null]);
    expect([done.processed_questions, done.failed_questions]).toEqual([3, 0]);
    expect(done.results.map((r: any) => [r.index, r.question, r.status])).toEqual(QUESTIONS.map((q, i) => [i, q, 'completed']));
    const [first, , third] = done.results;
    expect(first.citations.length).toBeGreaterThan(0);
    expect(first.citations[0].file_name).toBe('datica_11-incident_response_policy.md');
    expect(first.citations[0].index).toBe(1);
    expect(first.error).toBeNull();
    expect(third.citations).toEqual([]);

    const { res, text, rows } = await exportCsv(org.key, b.id);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="batch-${b.id}.csv"`);
    expect(text.split('\r\n')[0]).toBe('index,question,status,answer,sources,error');
    expect(rows.map((r) => [r.index, r.question, r.status])).toEqual(QUESTIONS.map((q, i) => [String(i), q, 'completed']));
    expect(rows[0].answer).toBe(first.answer);
    expect(rows[0].sources).toBe(first.citations.map((c: any) => (c.start_page ? `${c.file_name} p.${c.start_page}-${c.end_page}` : c.file_name)).join('; '));
    expect(rows[0].sources).toContain('datica_11-incident_response_policy.md');
    expect(rows[2].sources).toBe('');
  });

  it('exports while the batch is still running: every row, unfinished ones with their status', async () => {
    const questions = Array.from({ length: 40 }, (_, i) => `Question ${i}: what does the incident response policy say about reporting?`);
    const b = (await a.post('/api/v2/agent/batches').send({ questions, project_id: projectId })).body.data;
    const { res, rows } = await exportCsv(org.key, b.id);
    expect(res.status).toBe(200);
    expect(rows.map((r) => r.question)).toEqual(questions);
    for (const r of rows) {
      expect(['pending', 'completed']).toContain(r.status);
      if (r.status === 'pending') expect([r.answer, r.sources]).toEqual(['', '']);
    }
    const done = await waitForBatch(org.key, b.id);
    expect([done.status, done.processed_questions]).toEqual(['completed', 40]);
  });

  it('lists newest first with project and status filters and pagination; other orgs see nothing', async () => {
    const extra = (await a.post('/api/v2/agent/batches').send({ questions: ['What is a severity level?'], project_id: otherProjectId })).body.data;
    const all = await a.get('/api/v2/agent/batches');
    expect(all.status).toBe(200);
    expect(all.body.pagination).toEqual({ limit: 50, offset: 0, total: 3 });
    expect(all.body.data[0].id).toBe(extra.id);
    expect(all.body.data[0]).not.toHaveProperty('results');
    const times = all.body.data.map((x: any) => x.created_at);
    expect([...times].sort().reverse()).toEqual(times);

    const filtered = await a.get(`/api/v2/agent/batches?project_id=${otherProjectId}`);
    expect(filtered.body.data.map((x: any) => x.id)).toEqual([extra.id]);
    await waitForBatch(org.key, extra.id);
    const completed = await a.get('/api/v2/agent/batches?status=completed&limit=1&offset=1');
    expect(completed.body.pagination).toEqual({ limit: 1, offset: 1, total: 3 });
    expect(completed.body.data).toHaveLength(1);

    const o = api(other.key);
    expect((await o.get('/api/v2/agent/batches')).body.data).toEqual([]);
    expect((await o.get(`/api/v2/agent/batches/${extra.id}`)).status).toBe(404);
    expect((await exportCsv(other.key, extra.id)).res.status).toBe(404);
  });

  it('rejects bad input with the JSON envelope', async () => {
    const cases: [object, number, string][] = [
      [{ questions: [] }, 400, 'VALIDATION_ERROR'],
      [{ questions: Array(501).fill('q') }, 400, 'VALIDATION_ERROR'],
      [{ questions: ['x'.repeat(4001)] }, 400, 'VALIDATION_ERROR'],
      [{ questions: [''] }, 400, 'VALIDATION_ERROR'],
      [{ questions: ['q'], chat_type: 'legal' }, 400, 'VALIDATION_ERROR'],
      [{ questions: ['q'], chat_type: 'project' }, 400, 'VALIDATION_ERROR'],
      [{ questions: ['q'], name: 'n'.repeat(201) }, 400, 'VALIDATION_ERROR'],
      [{ questions: ['q'], chat_type: 'safety' }, 403, 'AGENT_NOT_ENABLED'],
      [{ questions: ['q'], project_id: '00000000-0000-4000-8000-000000000000' }, 404, 'NOT_FOUND'],
    ];
    for (const [body, status, code] of cases) {
      const res = await a.post('/api/v2/agent/batches').send(body);
      expect({ body: JSON.stringify(body).slice(0, 80), status: res.status, code: res.body.error?.code }).toEqual({
        body: JSON.stringify(body).slice(0, 80),
        status,
        code,
      });
    }
    expect((await a.get('/api/v2/agent/batches/not-a-uuid')).status).toBe(400);
    expect((await a.get('/api/v2/agent/batches?status=done')).status).toBe(400);
    expect((await a.get('/api/v2/agent/batches?limit=500')).status).toBe(400);
    expect((await a.get('/api/v2/agent/batches/00000000-0000-4000-8000-000000000000/export')).status).toBe(404);
  });
});

import { execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { corpusFile, twoOrgs, uploadFile, waitForDocument } from './support/harness';

jest.setTimeout(300_000);

/**
 * The whole service end to end on real documents: upload through presigned URLs, processing,
 * listing, download, answers with page-accurate citations, verification with verbatim evidence,
 * deletion, and isolation between organizations.
 */
describe('documents, answers and verification end to end', () => {
  const { orgA, a, b } = twoOrgs('E2E Construction');
  let projectId: string;
  const ids: Record<string, string> = {};

  const SAFETY_PLAN = [
    '# Site Safety Plan',
    '',
    '## Fall protection',
    '',
    'Guardrails shall be 42 inches high on every open side of the scaffold platform.',
    'Hard hats are required at all times in the work zone.',
    '',
    '## Site rules',
    '',
    'Smoking is prohibited on site.',
    'The site office is open from 7 am to 5 pm on weekdays.',
    '',
  ].join('\n');

  beforeAll(async () => {
    const res = await a.post('/api/v2/projects').send({ name: 'Riverside Tower', description: 'Twelve-storey residential build' });
    expect(res.status).toBe(201);
    projectId = res.body.data.id;

    ids.pdf = await uploadFile(orgA.key, { path: corpusFile('pdf/OSHA2001.pdf') }, projectId);
    ids.docx = await uploadFile(orgA.key, { path: corpusFile('docx/fedramp_oscal_working_with.docx') }, projectId);
    ids.html = await uploadFile(orgA.key, { path: corpusFile('html/osha_heat_app_First_Aid.html') }, projectId);
    ids.markdown = await uploadFile(orgA.key, { path: corpusFile('markdown/datica_11-incident_response_policy.md') });
    ids.plan = await uploadFile(orgA.key, { bytes: Buffer.from(SAFETY_PLAN), name: 'site-safety-plan.md', contentType: 'text/markdown' }, projectId);
    ids.corrupt = await uploadFile(orgA.key, { bytes: randomBytes(4096), name: 'scan-0001.pdf', contentType: 'application/pdf' }, projectId);

    const res2 = await a.post('/api/v2/documents/process').send({ document_ids: Object.values(ids) });
    expect(res2.status).toBe(200);
    expect(res2.body.data.processed.sort()).toEqual(Object.values(ids).sort());
    for (const id of Object.values(ids)) await waitForDocument(orgA.key, id);
  });

  it('processes every real format to completed with chunks, sizes and no error', async () => {
    for (const [name, id] of Object.entries(ids)) {
      if (name === 'corrupt') continue;
      const doc = (await a.get(`/api/v2/documents/${id}`)).body.data;
      expect({ name, status: doc.status, error: doc.error_message }).toEqual({ name, status: 'completed', error: null });
      expect(doc.chunk_count).toBeGreaterThan(0);
      expect(doc.size_bytes).toBeGreaterThan(0);
    }
  });

  it('fails a corrupt file with a message a user can act on', async () => {
    const doc = (await a.get(`/api/v2/documents/${ids.corrupt}`)).body.data;
    expect(doc.status).toBe('failed');
    expect(doc.chunk_count).toBeNull();
    expect(doc.error_message).toMatch(/pdf|corrupt|damaged|read/i);
  });

  it('lists documents newest first with filters and pagination', async () => {
    const all = await a.get('/api/v2/documents?limit=200');
    expect(all.status).toBe(200);
    expect(all.body.pagination).toEqual({ limit: 200, offset: 0, total: 6 });
    const created = all.body.data.map((d: any) => d.created_at);
    expect([...created].sort().reverse()).toEqual(created);
    expect(all.body.data.find((d: any) => d.id === ids.markdown).project_id).toBeNull();

    const inProject = await a.get(`/api/v2/documents?project_id=${projectId}`);
    expect(inProject.body.pagination.total).toBe(5);
    const failed = await a.get('/api/v2/documents?status=failed');
    expect(failed.body.data.map((d: any) => d.id)).toEqual([ids.corrupt]);
    const some = await a.get(`/api/v2/documents?document_ids=${ids.pdf},${ids.docx}&limit=1&offset=1`);
    expect(some.body.pagination).toEqual({ limit: 1, offset: 1, total: 2 });
    expect(some.body.data).toHaveLength(1);
    expect((await a.get('/api/v2/documents?document_ids=not-a-uuid')).status).toBe(400);
    expect((await a.get('/api/v2/documents?status=archived')).body.error.code).toBe('VALIDATION_ERROR');
    expect((await a.get('/api/v2/documents?limit=201')).status).toBe(400);

    const project = (await a.get(`/api/v2/projects/${projectId}`)).body.data;
    expect(project.document_count).toBe(5);
  });

  it('downloads the original bytes through a presigned URL', async () => {
    const res = await a.get(`/api/v2/documents/${ids.pdf}/download`);
    expect(res.status).toBe(200);
    const d = res.body.data;
    expect(d).toMatchObject({ document_id: ids.pdf, file_name: 'OSHA2001.pdf', content_type: 'application/pdf' });
    const expires = Date.parse(d.expires_at) - Date.now();
    expect(expires).toBeGreaterThan(8 * 60_000);
    expect(expires).toBeLessThan(12 * 60_000);
    const file = await fetch(d.download_url);
    expect(file.status).toBe(200);
    expect(Buffer.from(await file.arrayBuffer()).equals(readFileSync(corpusFile('pdf/OSHA2001.pdf')))).toBe(true);
  });

  it('answers a question with a verbatim quote cited on the right page', async () => {
    const res = await a.post('/api/v2/agent/query').send({
      question: 'Must employers notify employees who are exposed to toxic materials above the prescribed levels?',
      project_id: projectId,
    });
    expect(res.status).toBe(200);
    const { answer, citations, agent, usage } = res.body.data;
    expect(agent).toBe('project');
    expect(usage.total_tokens).toBeGreaterThan(0);
    expect(citations.length).toBeGreaterThan(0);
    for (const c of citations) expect(answer).toContain(`[${c.index}]`);
    const top = citations[0];
    expect(top).toMatchObject({ document_id: ids.pdf, file_name: 'OSHA2001.pdf', start_page: 12, end_page: 12 });
    expect(top.quote).toMatch(/notify any employee/);
    // Verbatim: the quote is in the page's text as pdftotext extracts it (whitespace normalised).
    const norm = (s: string) => s.replace(/\s+/g, ' ');
    const page12 = execFileSync('pdftotext', ['-f', '12', '-l', '12', corpusFile('pdf/OSHA2001.pdf'), '-'], { encoding: 'utf8' });
    expect(norm(page12.replace(/-\n/g, '-'))).toContain(norm(top.quote).slice(0, 60));
  });

  it('says plainly when nothing relevant is found, citing nothing', async () => {
    const res = await a.post('/api/v2/agent/query').send({ question: 'What is the recipe for a chocolate soufflé?', project_id: projectId });
    expect(res.status).toBe(200);
    expect(res.body.data.citations).toEqual([]);
    expect(res.body.data.answer).toMatch(/no relevant|not find|could not find|no information/i);
  });

  it('verifies requirements with verbatim evidence, pages and the handbook', async () => {
    const compliant = await a.post('/api/v2/check/verify').send({
      project_id: projectId,
      requirement: 'Employers shall promptly notify any employee exposed to toxic materials at levels which exceed the prescribed standard.',
    });
    expect(compliant.status).toBe(200);
    const v = compliant.body.data;
    expect(v.verdict).toBe('COMPLIANT');
    expect(v.confidence).toBeGreaterThanOrEqual(0.7);
    expect(v.recommendation).toBeNull();
    expect(v.sources[0]).toMatchObject({ handbook_id: ids.pdf, title: 'OSHA2001.pdf', start_page: 12, end_page: 12 });
    expect(v.handbook).toEqual({ id: ids.pdf, name: 'OSHA2001.pdf' });
    expect(v.evidence.length).toBeGreaterThan(20);

    const contradicts = await a.post('/api/v2/check/verify').send({ project_id: projectId, requirement: 'Smoking is allowed on site.' });
    expect(contradicts.body.data).toMatchObject({ verdict: 'CONTRADICTS', handbook: { id: ids.plan, name: 'site-safety-plan.md' } });
    expect(contradicts.body.data.evidence).toBe('Smoking is prohibited on site.');
    expect(contradicts.body.data.recommendation).toEqual(expect.any(String));

    const notFound = await a
      .post('/api/v2/check/verify')
      .send({ project_id: projectId, requirement: 'Cranes must be inspected by a certified crane inspector every twelve months.' });
    expect(notFound.body.data).toMatchObject({ verdict: 'NOT_FOUND', evidence: '', sources: [], handbook: null });
    expect(notFound.body.data.recommendation).toEqual(expect.any(String));

    const onlyPlan = await a
      .post('/api/v2/check/verify')
      .send({ project_id: projectId, requirement: 'Employers shall promptly notify any employee exposed to toxic materials.', handbook_ids: [ids.plan] });
    expect(onlyPlan.body.data.verdict).toBe('NOT_FOUND');
    const badHandbook = await a.post('/api/v2/check/verify').send({ project_id: projectId, requirement: 'x', handbook_ids: [ids.corrupt] });
    expect(badHandbook.status).toBe(404);
  });

  it('keeps a second organization from seeing anything of the first', async () => {
    expect((await b.get('/api/v2/projects')).body.pagination.total).toBe(0);
    expect((await b.get('/api/v2/documents')).body.data).toEqual([]);
    expect((await b.get(`/api/v2/projects/${projectId}`)).status).toBe(404);
    expect((await b.get(`/api/v2/documents/${ids.pdf}`)).body.error.code).toBe('NOT_FOUND');
    expect((await b.get(`/api/v2/documents/${ids.pdf}/download`)).status).toBe(404);
    const processed = await b.post('/api/v2/documents/process').send({ document_ids: [ids.pdf] });
    expect(processed.body.data.skipped).toEqual([{ document_id: ids.pdf, reason: 'not_found' }]);
    const answer = await b.post('/api/v2/agent/query').send({ question: 'Must employers notify employees who are exposed to toxic materials?' });
    expect(answer.body.data.citations).toEqual([]);
    const verify = await b.post('/api/v2/check/verify').send({ project_id: projectId, requirement: 'Smoking is prohibited on site.' });
    expect(verify.status).toBe(404);
    const del = await b.delete('/api/v2/documents').send({ document_ids: [ids.pdf] });
    expect(del.status).toBe(403);
    expect(del.body.error.code).toBe('FORBIDDEN');
    expect((await a.get(`/api/v2/documents/${ids.pdf}`)).status).toBe(200);
  });

  it('deletes a document: gone from listings, storage and answers', async () => {
    const download = (await a.get(`/api/v2/documents/${ids.pdf}/download`)).body.data.download_url;
    const unknown = randomUUID();
    const res = await a.delete('/api/v2/documents').send({ document_ids: [ids.pdf, unknown] });
    expect(res.status).toBe(200);
    expect(res.body.data.deleted).toEqual([ids.pdf]);
    expect((await a.get(`/api/v2/documents/${ids.pdf}`)).status).toBe(404);
    expect((await fetch(download)).status).toBe(404);
    const answer = await a.post('/api/v2/agent/query').send({
      question: 'Must employers notify employees who are exposed to toxic materials above the prescribed levels?',
      project_id: projectId,
    });
    expect(answer.body.data.citations.map((c: any) => c.document_id)).not.toContain(ids.pdf);
    expect((await a.delete(`/api/v2/projects/${projectId}`)).status).toBe(409);
  });
});

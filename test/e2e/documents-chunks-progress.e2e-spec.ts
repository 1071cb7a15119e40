import { randomBytes, randomUUID } from 'node:crypto';
import { corpusFile, createProject, twoOrgs, uploadFile, waitForDocument } from './support/harness';

jest.setTimeout(600_000);

/**
 * Issue 17 parts 2-3 through the gateway, on real corpus documents: processing progress while a
 * scanned PDF is OCRed, the chunks endpoints (document order, pagination, 404s, isolation), and
 * `section` (the heading path) on chunks, citations and verify sources.
 */
describe('document progress, chunks and sections', () => {
  const { orgA, a, b } = twoOrgs('E2E Chunks');
  let projectId: string;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    projectId = await createProject(orgA.key, 'Chunks and sections');
    ids.markdown = await uploadFile(orgA.key, { path: corpusFile('markdown/datica_11-incident_response_policy.md') }, projectId);
    ids.docx = await uploadFile(orgA.key, { path: corpusFile('docx/fedramp_oscal_working_with.docx') }, projectId);
    ids.html = await uploadFile(orgA.key, { path: corpusFile('html/osha_heat_app_First_Aid.html') }, projectId);
    const res = await a.post('/api/v2/documents/process').send({ document_ids: Object.values(ids) });
    expect(res.body.data.processed.sort()).toEqual(Object.values(ids).sort());
    for (const id of Object.values(ids)) expect((await waitForDocument(orgA.key, id, 300_000)).status).toBe('completed');
  });

  it("shows a scanned PDF's OCR progress while it runs, and clears it once completed", async () => {
    // Four scanned pages without a text layer: OCRed page by page before the document is ready.
    const id = await uploadFile(orgA.key, { path: corpusFile('pdf_scanned/dol_ca-16_authorization_for_medical_treatment_SCANNED.pdf') }, projectId);
    const reserved = (await a.get(`/api/v2/documents/${id}`)).body.data;
    expect(reserved).toMatchObject({ status: 'awaiting_upload', progress: null });
    expect((await a.post('/api/v2/documents/process').send({ document_ids: [id] })).body.data.processed).toEqual([id]);

    const seen: { status: string; progress: { stage: string; pages_done: number | null; pages_total: number | null } | null }[] = [];
    const deadline = Date.now() + 540_000;
    for (;;) {
      const doc = (await a.get(`/api/v2/documents/${id}`)).body.data;
      seen.push({ status: doc.status, progress: doc.progress });
      if (doc.status === 'completed' || doc.status === 'failed') break;
      if (Date.now() > deadline) throw new Error(`still ${doc.status} (${JSON.stringify(doc.progress)})`);
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(seen[seen.length - 1]).toEqual({ status: 'completed', progress: null });
    // Never null while processing or ready; always one of the five stages.
    for (const s of seen.slice(0, -1)) {
      expect(['processing', 'ready']).toContain(s.status);
      expect(['extracting', 'ocr', 'chunking', 'indexing', 'embedding']).toContain(s.progress?.stage);
    }
    const ocr = seen.filter((s) => s.progress?.stage === 'ocr');
    expect(ocr.length).toBeGreaterThan(0);
    expect(ocr.every((s) => s.status === 'processing' && s.progress!.pages_total === 4)).toBe(true);
    const done = ocr.map((s) => s.progress!.pages_done!);
    expect(done).toEqual([...done].sort((x, y) => x - y));
    expect(done.every((n) => n >= 0 && n <= 4)).toBe(true);
  });

  it("lists a document's chunks in document order with pagination, each with its heading path as section", async () => {
    const doc = (await a.get(`/api/v2/documents/${ids.markdown}`)).body.data;
    const all = await a.get(`/api/v2/documents/${ids.markdown}/chunks?limit=200`);
    expect(all.status).toBe(200);
    expect(all.body.pagination).toEqual({ limit: 200, offset: 0, total: doc.chunk_count });
    const chunks = all.body.data;
    expect(chunks.map((c: any) => c.order_index)).toEqual(chunks.map((_: unknown, i: number) => i));
    expect(Object.keys(chunks[0]).sort()).toEqual(['document_id', 'end_page', 'node_id', 'order_index', 'section', 'start_page', 'text']);
    expect(chunks[0]).toMatchObject({ document_id: ids.markdown, start_page: null, end_page: null, section: '11. Incident Response Policy' });
    // The "Identification Phase" steps sit under their three headings.
    const step = chunks.find((c: any) => c.text.includes('Immediately upon observation'));
    expect(step.section).toBe('11. Incident Response Policy > 11.2 Incident Management Policies > 11.2.1 Identification Phase');

    const page = await a.get(`/api/v2/documents/${ids.markdown}/chunks?limit=3&offset=2`);
    expect(page.body.pagination).toEqual({ limit: 3, offset: 2, total: doc.chunk_count });
    expect(page.body.data).toEqual(chunks.slice(2, 5));

    const one = await a.get(`/api/v2/documents/${ids.markdown}/chunks/${step.node_id}`);
    expect(one.status).toBe(200);
    expect(one.body.data).toEqual(step);
  });

  it('gives DOCX and HTML chunks the section a reader sees in the document', async () => {
    const docx = (await a.get(`/api/v2/documents/${ids.docx}/chunks?limit=200`)).body.data;
    const catalogs = docx.find((c: any) => c.text.startsWith('The resolved profile catalog for each FedRAMP baseline'));
    expect(catalogs.section).toBe('Working with OSCAL Files > SSP File Concepts > Resolved Profile Catalogs');
    const html = (await a.get(`/api/v2/documents/${ids.html}/chunks?limit=200`)).body.data;
    expect(html.map((c: any) => c.section)).toEqual([
      'First Aid > Heat Stroke',
      'First Aid > Heat Exhaustion',
      'First Aid > Rhabdomyolysis',
      'First Aid > Heat Cramps',
      'First Aid > Heat Rash',
    ]);
  });

  it('answers with citations whose section and node are the chunk behind them', async () => {
    const res = await a
      .post('/api/v2/agent/query')
      .send({ question: 'What should be done for a worker with heat cramps?', project_id: projectId, document_ids: [ids.html] });
    expect(res.status).toBe(200);
    const { citations } = res.body.data;
    expect(citations.length).toBeGreaterThan(0);
    for (const c of citations) {
      const chunk = (await a.get(`/api/v2/documents/${c.document_id}/chunks/${c.chunk_id}`)).body.data;
      expect(chunk.text).toContain(c.quote);
      expect(c.section).toBe(chunk.section);
      expect(c.section).toMatch(/^First Aid > /);
    }
    expect(citations.map((c: any) => c.section)).toContain('First Aid > Heat Cramps');
  });

  it('carries section on verify sources', async () => {
    const res = await a.post('/api/v2/check/verify').send({
      project_id: projectId,
      requirement: 'Workers with heat cramps must rest in a shady or cool area and drink water or other liquids.',
      handbook_ids: [ids.html],
    });
    expect(res.status).toBe(200);
    const { sources } = res.body.data;
    expect(sources.length).toBeGreaterThan(0);
    for (const s of sources) {
      const chunk = (await a.get(`/api/v2/documents/${s.handbook_id}/chunks/${s.node_id}`)).body.data;
      expect(s.section).toBe(chunk.section);
      expect(s.section).toMatch(/^First Aid > /);
    }
  });

  it('carries section on batch citations and check-run sub-requirement sources', async () => {
    const until = async (path: string, done: (d: any) => boolean) => {
      const deadline = Date.now() + 300_000;
      for (;;) {
        const d = (await a.get(path)).body.data;
        if (done(d)) return d;
        if (Date.now() > deadline) throw new Error(`${path} still ${d?.status}`);
        await new Promise((r) => setTimeout(r, 300));
      }
    };
    const batch = (await a.post('/api/v2/agent/batches').send({ questions: ['What should be done for a worker with heat cramps?'], project_id: projectId }))
      .body.data;
    const finished = await until(`/api/v2/agent/batches/${batch.id}`, (d) => ['completed', 'failed'].includes(d.status));
    const citations = finished.results[0].citations;
    expect(citations.length).toBeGreaterThan(0);
    for (const c of citations) {
      expect(c.section).toBe((await a.get(`/api/v2/documents/${c.document_id}/chunks/${c.chunk_id}`)).body.data.section);
    }
    expect(citations.map((c: any) => c.section)).toContain('First Aid > Heat Cramps');

    const run = (
      await a.post('/api/v2/check/runs').send({
        project_id: projectId,
        name: 'Heat illness',
        handbook_ids: [ids.html],
        requirements: [{ text: 'Workers with heat cramps must rest in a shady or cool area and drink water or other liquids.' }],
      })
    ).body.data;
    expect((await a.post(`/api/v2/check/runs/${run.id}/trigger`).send({ skip_breakdown: true })).status).toBe(200);
    const checked = await until(`/api/v2/check/runs/${run.id}`, (d) => ['completed', 'failed'].includes(d.status));
    const sources = checked.requirements[0].sub_requirements.flatMap((s: any) => s.sources ?? []);
    expect(sources.length).toBeGreaterThan(0);
    for (const src of sources) {
      expect(src.section).toBe((await a.get(`/api/v2/documents/${src.handbook_id}/chunks/${src.node_id}`)).body.data.section);
      expect(src.section).toMatch(/^First Aid > /);
    }
  });

  it("answers 404 for another org's document, an unknown chunk, or a document without chunks yet; 400 for malformed ids", async () => {
    const first = (await a.get(`/api/v2/documents/${ids.html}/chunks?limit=1`)).body.data[0];
    for (const path of [`/api/v2/documents/${ids.html}/chunks`, `/api/v2/documents/${ids.html}/chunks/${first.node_id}`]) {
      const res = await b.get(path);
      expect({ path, status: res.status, code: res.body.error?.code }).toEqual({ path, status: 404, code: 'NOT_FOUND' });
    }
    // A chunk id of another document of the same org is not a chunk of this one.
    expect((await a.get(`/api/v2/documents/${ids.docx}/chunks/${first.node_id}`)).status).toBe(404);
    expect((await a.get(`/api/v2/documents/${ids.html}/chunks/${randomUUID()}`)).status).toBe(404);
    expect((await a.get(`/api/v2/documents/${randomUUID()}/chunks`)).status).toBe(404);

    const pending = (await a.post('/api/v2/documents').send({ file_name: 'later.md', content_type: 'text/markdown', size_bytes: 10 })).body.data.id;
    const res = await a.get(`/api/v2/documents/${pending}/chunks`);
    expect(res.status).toBe(404);
    expect(res.body.error.message).toMatch(/no chunks yet/);

    const corrupt = await uploadFile(orgA.key, { bytes: randomBytes(4096), name: 'broken.pdf', contentType: 'application/pdf' });
    await a.post('/api/v2/documents/process').send({ document_ids: [corrupt] });
    expect(await waitForDocument(orgA.key, corrupt)).toMatchObject({ status: 'failed', progress: null });
    const failed = await a.get(`/api/v2/documents/${corrupt}/chunks`);
    expect([failed.status, failed.body.error.code]).toEqual([404, 'NOT_FOUND']);
    expect(failed.body.error.message).toMatch(/processing failed/);

    expect((await a.get(`/api/v2/documents/${ids.html}/chunks/not-a-uuid`)).status).toBe(400);
    expect((await a.get(`/api/v2/documents/${ids.html}/chunks?limit=0`)).status).toBe(400);
    expect((await a.get(`/api/v2/documents/${ids.html}/chunks?limit=201`)).status).toBe(400);
  });
});

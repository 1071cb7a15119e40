// @kb-platform/sdk against the live stack: every endpoint of service-api.md through the generated
// typed client or the helpers, with what a user of the SDK sees (resources, typed errors, retries).
import { mkdtempSync, readFileSync, writeFileSync, copyFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'csv-parse/sync';
import {
  chat,
  chatText,
  clearRequirementReview,
  compareCheckRuns,
  createWebhook,
  downloadReport,
  exportBatch,
  getChunk,
  getPage,
  getWebhook,
  iterateChunks,
  KbApiError,
  KbAuthenticationError,
  KbConflictError,
  KbRateLimitError,
  KbValidationError,
  KbWebhookVerificationError,
  listAuditEvents,
  listChunks,
  listWebhookDeliveries,
  listWebhooks,
  verifyWebhook,
  KbClient,
  pollIntervals,
  rerunCheckRun,
  listDocuments,
  setRequirementReview,
  waitForCheckRun,
  uploadBlob,
  uploadBlobs,
  uploadDirectory,
  uploadFile,
  uploadFiles,
  waitForDocuments,
  type UploadProgress,
} from '@kb-platform/sdk';
import { baseUrl, corpusFile, newOrg } from './support/harness';
import { startReceiver } from './support/webhook-receiver';

jest.setTimeout(300_000);

/** The most polls a wait of `elapsedMs` can make with the default intervals (0.5 s doubling to 10 s): one at once, one after each interval that fits. */
function maxPolls(elapsedMs: number): number {
  let polls = 1;
  let at = 0;
  for (const ms of pollIntervals()) {
    at += ms;
    if (at > elapsedMs) return polls;
    polls++;
  }
  return polls;
}

describe('TypeScript SDK', () => {
  const org = newOrg('E2E SDK');
  const kb = new KbClient({ baseUrl: baseUrl(), apiKey: org.key });
  /** A client of the same key that records each request it sends, as `METHOD /path?query`, through its `fetch` option. */
  const countingClient = () => {
    const requests: string[] = [];
    const client = new KbClient({
      baseUrl: baseUrl(),
      apiKey: org.key,
      fetch: async (input, init) => {
        const request = new Request(input, init);
        const url = new URL(request.url);
        requests.push(`${request.method} ${url.pathname}${url.search}`);
        return fetch(request);
      },
    });
    return { kb: client, requests };
  };
  let projectId: string;
  let pdfId: string;

  beforeAll(async () => {
    projectId = (await kb.data(kb.api.POST('/api/v2/projects', { body: { name: 'SDK project', description: 'made by the SDK test' } }))).id;
  });

  it('reads the organization of the key', async () => {
    expect(await kb.data(kb.api.GET('/api/v2/organization'))).toEqual({ id: org.orgId, name: 'E2E SDK' });
    expect(await kb.organization.get()).toEqual({ id: org.orgId, name: 'E2E SDK' });
  });

  it('manages projects with kb.projects: create, get, list iterated across pages, update, delete (409 while it has documents)', async () => {
    const created = await kb.projects.create({ name: 'Temporary' });
    expect(created).toMatchObject({ name: 'Temporary', description: null, document_count: 0, org_id: org.orgId });
    expect(await kb.projects.get(created.id)).toEqual(created);
    const page = await kb.projects.list({ limit: 1 }).firstPage();
    expect(page.pagination).toEqual({ limit: 1, offset: 0, total: 2 });
    expect(page.data.map((p) => p.id)).toEqual([created.id]);
    // Every project, a page of one at a time: two requests, newest first.
    const counted = countingClient();
    const all = [];
    for await (const project of counted.kb.projects.list({ limit: 1 })) all.push(project.id);
    expect(all).toEqual([created.id, projectId]);
    expect(counted.requests).toEqual(['GET /api/v2/projects?limit=1&offset=0', 'GET /api/v2/projects?limit=1&offset=1']);
    const renamed = await kb.projects.update(created.id, { name: 'Renamed', description: 'now described' });
    expect([renamed.name, renamed.description]).toEqual(['Renamed', 'now described']);
    expect(await kb.projects.delete(created.id)).toBeUndefined();
    const gone = await kb.projects.get(created.id).catch((e) => e);
    expect(gone).toBeInstanceOf(KbApiError);
    expect(gone).toMatchObject({ status: 404, code: 'NOT_FOUND' });
  });

  it('uploadFile reserves, uploads with byte progress, processes and waits until completed', async () => {
    const events: UploadProgress[] = [];
    const doc = await uploadFile(kb, corpusFile('pdf/OSHA2001.pdf'), { projectId, onProgress: (p) => events.push(p) });
    pdfId = doc.id;
    expect(doc).toMatchObject({ file_name: 'OSHA2001.pdf', status: 'completed', project_id: projectId, size_bytes: 829059 });
    expect(doc.chunk_count).toBeGreaterThan(10);
    const stages = events.map((e) => e.stage);
    expect(stages[0]).toBe('reserving');
    expect(stages.indexOf('uploading')).toBeLessThan(stages.indexOf('processing'));
    expect(stages[stages.length - 1]).toBe('done');
    const sent = events.filter((e) => e.stage === 'uploading').map((e) => e.bytesSent);
    expect(sent[sent.length - 1]).toBe(829059);
    expect(sent.length).toBeGreaterThan(2);

    const blocked = await kb.projects.delete(projectId).catch((e) => e);
    expect(blocked).toMatchObject({ status: 409, code: 'CONFLICT' });
  });

  it('uploadDirectory uploads the accepted files of a folder, reports the others, and failures per file', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'kb-sdk-'));
    copyFileSync(corpusFile('markdown/jupiterone_policy_ir.md'), path.join(dir, 'ir.md'));
    copyFileSync(corpusFile('markdown/jupiterone_policy_access.md'), path.join(dir, 'access.md'));
    writeFileSync(path.join(dir, 'notes.xyz'), 'not a supported type');
    writeFileSync(path.join(dir, 'empty.txt'), '');
    const summary = await uploadDirectory(kb, dir, { projectId, pollIntervalMs: 500 });
    expect(summary.documents.map((d) => [path.basename(d.file), d.document.status])).toEqual([
      ['access.md', 'completed'],
      ['ir.md', 'completed'],
    ]);
    expect(summary.skipped).toEqual([{ file: path.join(dir, 'notes.xyz'), reason: 'unsupported file type' }]);
    // An empty file: refused at reservation or failed in processing, either way reported for that file alone.
    expect(summary.failed.map((f) => path.basename(f.file))).toEqual(['empty.txt']);
    expect(summary.failed[0].error).toMatch(/\w/);
  });

  it('uploadBlobs uploads a Blob and a File (the browser path) into a project and waits; uploadBlob with replaces makes version 2', async () => {
    const policy = readFileSync(corpusFile('markdown/jupiterone_policy_ir.md'));
    const events: UploadProgress[] = [];
    const summary = await uploadBlobs(
      kb,
      [
        { name: 'ir-from-blob.md', data: new Blob([policy]) },
        new File([readFileSync(corpusFile('markdown/jupiterone_policy_access.md'))], 'access-from-file.md', { type: 'text/markdown' }),
      ],
      { projectId, pollIntervalMs: 500, onProgress: (p) => events.push(p) },
    );
    expect(summary.failed).toEqual([]);
    expect(summary.documents.map((d) => [d.file, d.document.file_name, d.document.status, d.document.project_id])).toEqual([
      ['ir-from-blob.md', 'ir-from-blob.md', 'completed', projectId],
      ['access-from-file.md', 'access-from-file.md', 'completed', projectId],
    ]);
    expect(summary.documents[0].document.size_bytes).toBe(policy.length);
    // Byte progress of a fetch PUT (no XMLHttpRequest in Node): 0, then the whole size; each item by its index.
    const blobBytes = events.filter((e) => e.index === 0 && e.stage === 'uploading').map((e) => e.bytesSent);
    expect(blobBytes[0]).toBe(0);
    expect(blobBytes[blobBytes.length - 1]).toBe(policy.length);
    expect(events.filter((e) => e.index === 1).at(-1)).toMatchObject({ file: 'access-from-file.md', stage: 'done' });

    const v1 = summary.documents[0].document;
    const v2 = await uploadBlob(
      kb,
      {
        name: 'ir-from-blob.md',
        data: new TextEncoder().encode(policy.toString('utf8').replace('All alerts must be reviewed', 'All alerts must be reviewed within 5 minutes')),
      },
      {
        projectId,
        replaces: v1.id,
        pollIntervalMs: 500,
      },
    );
    expect(v2).toMatchObject({ status: 'completed', version: 2, replaces: v1.id, project_id: projectId });
    expect(await kb.data(kb.api.GET('/api/v2/documents/{id}', { params: { path: { id: v1.id } } }))).toMatchObject({ superseded_by: v2.id });
    const again = await uploadBlob(kb, new File([policy], 'ir-from-blob.md'), { projectId, replaces: v1.id }).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(KbConflictError);
    await expect(uploadBlobs(kb, [new File(['a'], 'a.txt'), new File(['b'], 'b.txt')], { replaces: v2.id })).rejects.toThrow(TypeError);
    await kb.data(kb.api.DELETE('/api/v2/documents', { body: { document_ids: [v1.id, v2.id, summary.documents[1].document.id] } }));
  });

  it('lists the audit log with listAuditEvents: filters, Date bounds, typed 400', async () => {
    const since = new Date(Date.now() - 1000);
    const created = await kb.data(kb.api.POST('/api/v2/projects', { body: { name: 'Audited' } }));
    await kb.data(kb.api.PATCH('/api/v2/projects/{id}', { params: { path: { id: created.id } }, body: { description: 'audited' } }));
    const page = await listAuditEvents(kb, { resourceType: 'project', resourceId: created.id, since });
    expect(page.data.map((e) => e.action)).toEqual(['project.updated', 'project.created']);
    expect(page.data[0]).toMatchObject({
      resource_id: created.id,
      actor: { api_key_name: 'E2E SDK key' },
      data: { before: { description: null }, after: { description: 'audited' } },
    });
    expect(page.pagination).toEqual({ limit: 50, offset: 0, total: 2 });
    expect((await listAuditEvents(kb, { action: 'project.created', resourceId: created.id, limit: 1, until: since })).data).toEqual([]);
    // The same log through kb.audit, every event of the resource across pages of one.
    expect((await kb.audit.list({ resourceType: 'project', resourceId: created.id, limit: 1 }).toArray()).map((e) => e.action)).toEqual([
      'project.updated',
      'project.created',
    ]);
    const bad = await listAuditEvents(kb, { since: 'yesterday' }).catch((e) => e);
    expect(bad).toBeInstanceOf(KbApiError);
    expect(bad).toMatchObject({ status: 400, code: 'VALIDATION_ERROR' });
  });

  it('lists, reads, downloads and deletes documents with kb.documents (and the typed client)', async () => {
    const page = await kb.page(kb.api.GET('/api/v2/documents', { params: { query: { project_id: projectId, status: 'completed' } } }));
    expect(page.data.map((d) => d.file_name).sort()).toEqual(['OSHA2001.pdf', 'access.md', 'ir.md']);
    const iterated = await kb.documents.list({ projectId, status: 'completed', limit: 2 }).toArray();
    expect(iterated.map((d) => d.id)).toEqual(page.data.map((d) => d.id));
    const one = await kb.documents.get(pdfId);
    expect(one.status).toBe('completed');
    expect(await kb.documents.wait([pdfId])).toEqual([one]);
    expect(await waitForDocuments(kb, [pdfId])).toEqual([one]);
    const download = await kb.documents.download(pdfId);
    const bytes = Buffer.from(await (await fetch(download.download_url)).arrayBuffer());
    expect(bytes.equals(readFileSync(corpusFile('pdf/OSHA2001.pdf')))).toBe(true);

    const reserved = await kb.documents.reserve({ file_name: 'never-sent.pdf', content_type: 'application/pdf', size_bytes: 10 });
    expect(reserved.upload.method).toBe('PUT');
    const processed = await kb.documents.process([reserved.id]);
    expect(processed).toEqual({ processed: [], skipped: [{ document_id: reserved.id, reason: 'upload_not_found' }], failed: [] });
    expect(await kb.documents.delete([reserved.id])).toEqual({ deleted: [reserved.id] });
    const fromMemory = await kb.documents.uploadOne(
      { name: 'namespace-note.txt', data: new TextEncoder().encode('Ladders are inspected weekly.') },
      { pollIntervalMs: 500 },
    );
    expect(fromMemory).toMatchObject({ file_name: 'namespace-note.txt', status: 'completed' });
    await kb.documents.delete([fromMemory.id]);
  });

  it('uploads a new version with replaces; listDocuments with current lists only current versions', async () => {
    const tmp = mkdtempSync(path.join(os.tmpdir(), 'kb-sdk-versions-'));
    const v1File = path.join(tmp, 'ir-policy.md');
    copyFileSync(corpusFile('markdown/jupiterone_policy_ir.md'), v1File);
    const v1 = await uploadFile(kb, v1File);
    expect(v1).toMatchObject({ status: 'completed', version: 1, replaces: null, superseded_by: null });
    const v2File = path.join(tmp, 'ir-policy-v2.md');
    writeFileSync(v2File, readFileSync(v1File, 'utf8').replace('All alerts must be reviewed', 'All alerts must be reviewed within 15 minutes'));
    const v2 = await uploadFile(kb, v2File, { replaces: v1.id });
    expect(v2).toMatchObject({ status: 'completed', version: 2, replaces: v1.id, superseded_by: null });
    const current = await listDocuments(kb, { current: true, limit: 200 });
    expect(current.data.map((d) => d.id)).toContain(v2.id);
    expect(current.data.map((d) => d.id)).not.toContain(v1.id);
    const all = await listDocuments(kb, { limit: 200 });
    expect(all.data.find((d) => d.id === v1.id)).toMatchObject({ superseded_by: v2.id });
    const again = await uploadFile(kb, v2File, { replaces: v1.id }).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(KbApiError);
    expect(again).toMatchObject({ status: 409, code: 'CONFLICT' });
    await expect(uploadFiles(kb, [v1File, v2File], { replaces: v2.id })).rejects.toThrow(TypeError);
    await kb.data(kb.api.DELETE('/api/v2/documents', { body: { document_ids: [v1.id, v2.id] } }));
  });

  it('raises typed errors with code, status and request id', async () => {
    const error = await kb.data(kb.api.POST('/api/v2/projects', { body: { name: '' } })).catch((e) => e);
    expect(error).toBeInstanceOf(KbApiError);
    expect(error).toBeInstanceOf(KbValidationError);
    expect(error).toMatchObject({ status: 400, code: 'VALIDATION_ERROR' });
    expect(error.request_id).toMatch(/\S{8,}/);
    expect(error.requestId).toBe(error.request_id);
    const unauthorized = new KbClient({ baseUrl: baseUrl(), apiKey: 'kb_not_a_key' });
    const denied = await unauthorized.data(unauthorized.api.GET('/api/v2/organization')).catch((e) => e);
    expect(denied).toBeInstanceOf(KbAuthenticationError);
    expect(denied).toMatchObject({ status: 401, code: 'UNAUTHORIZED' });
  });

  it('answers a question about the uploaded PDF with citations (kb.agent.query)', async () => {
    const answer = await kb.agent.query({
      question: 'Must employers notify employees exposed to toxic materials?',
      project_id: projectId,
      chat_type: 'project',
    });
    expect(answer.citations.length).toBeGreaterThan(0);
    expect(answer.citations[0].file_name).toBe('OSHA2001.pdf');
    expect(answer.answer).toMatch(/\[1\]/);
  });

  it('reads the chunks of a document: a page, every page by the iterator, the one behind a citation', async () => {
    const doc = await kb.data(kb.api.GET('/api/v2/documents/{id}', { params: { path: { id: pdfId } } }));
    const page = await listChunks(kb, pdfId, { limit: 3, offset: 2 });
    expect(page.pagination).toEqual({ limit: 3, offset: 2, total: doc.chunk_count });
    const all = [];
    for await (const chunk of iterateChunks(kb, pdfId, { pageSize: 7 })) all.push(chunk);
    expect(all).toHaveLength(doc.chunk_count!);
    expect(all.slice(2, 5)).toEqual(page.data);
    expect(await kb.documents.chunks(pdfId, { limit: 200 }).toArray()).toEqual(all);
    expect(all.every((c) => c.document_id === pdfId && typeof c.text === 'string')).toBe(true);
    const answer = await kb.data(
      kb.api.POST('/api/v2/agent/query', {
        body: { question: 'Must employers notify employees exposed to toxic materials?', project_id: projectId, chat_type: 'project' },
      }),
    );
    const citation = answer.citations[0];
    const chunk = await getChunk(kb, citation.document_id, citation.chunk_id);
    expect(chunk.text.replace(/\s+/g, ' ')).toContain(citation.quote.replace(/\s+/g, ' '));
    const missing = await getChunk(kb, pdfId, '00000000-0000-4000-8000-000000000000').catch((e) => e);
    expect(missing).toMatchObject({ status: 404, code: 'NOT_FOUND' });
  });

  it("places a citation's quote: location slices the chunk text, boxes lie inside the page getPage sizes; getPage's 404", async () => {
    const answer = await kb.data(
      kb.api.POST('/api/v2/agent/query', {
        body: { question: 'Must employers notify employees exposed to toxic materials?', project_id: projectId, chat_type: 'project' },
      }),
    );
    const citation = answer.citations[0];
    const chunk = await kb.documents.chunk(citation.document_id, citation.chunk_id);
    expect(chunk.text.slice(citation.location!.char_start, citation.location!.char_end)).toBe(citation.quote);
    expect(citation.boxes.length).toBeGreaterThan(0);
    for (const box of citation.boxes) {
      const size = await kb.documents.page(citation.document_id, box.page);
      expect(size.page).toBe(box.page);
      expect(box.x1 <= size.width && box.y1 <= size.height && box.x0 < box.x1 && box.y0 < box.y1).toBe(true);
    }
    const past = await getPage(kb, pdfId, 10_000).catch((e) => e);
    expect(past).toMatchObject({ status: 404, code: 'NOT_FOUND' });
  });

  it('manages a webhook endpoint with kb.webhooks, and verifies what the service delivers to it with verifyWebhook', async () => {
    const receiver = await startReceiver();
    try {
      const hook = await kb.webhooks.create({ url: receiver.url('/sdk'), events: ['document.deleted'], description: 'SDK hook' });
      expect(hook.secret).toMatch(/^whsec_/);
      expect((await listWebhooks(kb, { limit: 10 })).data.map((h) => h.id)).toEqual([hook.id]);
      expect((await kb.webhooks.list().toArray()).map((h) => h.id)).toEqual([hook.id]);
      expect(await kb.webhooks.get(hook.id)).toEqual({ ...hook, secret: undefined });
      const refused = await createWebhook(kb, { url: 'ftp://example.com/x', events: ['*'] }).catch((e) => e);
      expect(refused).toMatchObject({ status: 400, code: 'VALIDATION_ERROR' });

      const reserved = await kb.data(kb.api.POST('/api/v2/documents', { body: { file_name: 'sdk-hook.txt', content_type: 'text/plain', size_bytes: 4 } }));
      await kb.data(kb.api.DELETE('/api/v2/documents', { body: { document_ids: [reserved.id] } }));
      await receiver.waitFor((all) => all.some((r) => r.path === '/sdk'), 60_000, 'the SDK endpoint delivery');
      const received = receiver.at('/sdk')[0];
      const event = verifyWebhook(received.body, received.headers, hook.secret);
      expect(event).toMatchObject({ type: 'document.deleted', org_id: org.orgId, data: { id: reserved.id, file_name: 'sdk-hook.txt' } });
      expect(() => verifyWebhook(received.body, received.headers, 'whsec_' + Buffer.alloc(32, 1).toString('base64'))).toThrow(KbWebhookVerificationError);

      let log = await listWebhookDeliveries(kb, hook.id);
      while (log.data[0]?.status !== 'succeeded') {
        await new Promise((r) => setTimeout(r, 200));
        log = await listWebhookDeliveries(kb, hook.id);
      }
      expect(log.pagination.total).toBe(1);
      expect(log.data[0]).toMatchObject({ event: 'document.deleted', event_id: event.id, attempts: 1, response_status: 200 });
      expect((await kb.webhooks.deliveries(hook.id).toArray()).map((d) => d.id)).toEqual([log.data[0].id]);
      expect(await kb.webhooks.retryDelivery(hook.id, log.data[0].id)).toMatchObject({ id: log.data[0].id, status: 'pending' });
      await receiver.waitFor((all) => all.filter((r) => r.path === '/sdk').length === 2, 60_000, 'the retried delivery');
      expect(verifyWebhook(receiver.at('/sdk')[1].body, receiver.at('/sdk')[1].headers, hook.secret).id).toBe(event.id);

      expect(await kb.webhooks.update(hook.id, { enabled: false, description: null })).toMatchObject({ enabled: false, description: null });
      expect(await kb.webhooks.delete(hook.id)).toBeUndefined();
      expect(await getWebhook(kb, hook.id).catch((e) => e)).toMatchObject({ status: 404, code: 'NOT_FOUND' });
    } finally {
      await receiver.close();
    }
  });

  it('streams a chat reply as SSE events meta → delta… → citations → done, and the same reply without streaming', async () => {
    const request = {
      messages: [{ role: 'user' as const, content: 'Must employers notify employees exposed to toxic materials?' }],
      project_id: projectId,
      chat_type: 'project' as const,
    };
    const events = [];
    for await (const event of kb.agent.chat(request)) events.push(event);
    const names = events.map((e) => e.event);
    expect(names[0]).toBe('meta');
    expect(names.slice(-2)).toEqual(['citations', 'done']);
    expect(names.filter((n) => n === 'delta').length).toBeGreaterThan(0);
    const text = events.flatMap((e) => (e.event === 'delta' ? [e.data.content] : [])).join('');
    const plain = await kb.data(kb.api.POST('/api/v2/chat', { body: { ...request, stream: false } }));
    expect(text).toBe(plain.message.content);
    const collected = await kb.agent.chatText(request);
    expect((await chatText(kb, request)).message.content).toBe(plain.message.content);
    expect(collected.message.content).toBe(plain.message.content);
    expect(collected.citations.map((c) => c.file_name)).toContain('OSHA2001.pdf');
    // An error before the stream begins is the envelope's, thrown typed.
    await expect(chat(kb, { messages: [{ role: 'user', content: 'ladder safety?' }], chat_type: 'safety' }).next()).rejects.toMatchObject({
      status: 403,
      code: 'AGENT_NOT_ENABLED',
    });
  });

  it('verifies one requirement with verbatim evidence (kb.checks.verify)', async () => {
    const verdict = await kb.checks.verify({ project_id: projectId, requirement: 'Employers must notify employees exposed to toxic materials.' });
    expect(verdict.verdict).toBe('COMPLIANT');
    expect(verdict.sources[0].title).toBe('OSHA2001.pdf');
  });

  it('kb.runs.createAndWait (runCheck) creates, triggers and waits with progress and few requests; the run is listed with its requirements', async () => {
    const progress: number[] = [];
    const counted = countingClient();
    const started = Date.now();
    const run = await counted.kb.runs.createAndWait(
      {
        project_id: projectId,
        name: 'SDK run',
        requirements: [
          'Employers must notify employees exposed to toxic materials.',
          { text: 'Backups must be encrypted with AES-256.', metadata: { ref: 'B-1' } },
        ],
      },
      { onProgress: (r) => progress.push(r.processed_requirements) },
    );
    // The wait polls the light list of runs (no requirements) with backoff, and reads the run's detail once, at the end.
    const polls = counted.requests.filter((r) => r.startsWith('GET /api/v2/check/runs?'));
    expect(counted.requests.filter((r) => !polls.includes(r))).toEqual([
      'POST /api/v2/check/runs',
      `POST /api/v2/check/runs/${run.id}/trigger`,
      `GET /api/v2/check/runs/${run.id}`,
    ]);
    expect(polls.length).toBeGreaterThan(0);
    expect(polls.length).toBeLessThanOrEqual(maxPolls(Date.now() - started));
    expect(polls.every((r) => /[?&]limit=(20|50)(&|$)/.test(r))).toBe(true);
    expect(run.status).toBe('completed');
    expect(run.total_requirements).toBe(2);
    expect(run.passed_requirements + run.failed_requirements).toBe(2);
    expect(progress[0]).toBe(0);
    expect(progress[progress.length - 1]).toBe(2);
    const [first, second] = [...run.requirements].sort((a, b) => a.order_index - b.order_index);
    expect(first.sub_requirements.every((s) => s.status === 'comply')).toBe(true);
    expect(second.sub_requirements.some((s) => s.status === 'not-comply')).toBe(true);

    const listed = await kb.page(kb.api.GET('/api/v2/check/runs', { params: { query: { project_id: projectId } } }));
    expect((listed.data as Array<{ id: string }>).map((r) => r.id)).toContain(run.id);
    expect((await kb.runs.list({ projectId }).toArray()).map((r) => r.id)).toEqual([run.id]);
    expect(await kb.runs.get(run.id)).toEqual(run);
    const requirements = await kb.runs.requirements(run.id);
    expect(requirements.map((r) => r.text)).toEqual(['Employers must notify employees exposed to toxic materials.', 'Backups must be encrypted with AES-256.']);

    // A person's review next to the machine's verdict, counted in review_summary, then removed.
    const reviewed = await kb.reviews.set(run.id, second.id, { decision: 'pass', reviewer: 'SDK reviewer', comment: 'Encryption is at rest only; accepted.' });
    expect(reviewed).toMatchObject({
      id: second.id,
      review: { decision: 'pass', reviewer: 'SDK reviewer', comment: 'Encryption is at rest only; accepted.', outdated: false },
    });
    const withReview = await kb.data(kb.api.GET('/api/v2/check/runs/{id}', { params: { path: { id: run.id } } }));
    expect(withReview.review_summary).toEqual({ reviewed: 1, passed: 2, failed: 0 });
    await expect(setRequirementReview(kb, run.id, second.id, { decision: 'pass', reviewer: '' })).rejects.toMatchObject({
      status: 400,
      code: 'VALIDATION_ERROR',
    });
    await expect(setRequirementReview(kb, run.id, '00000000-0000-4000-8000-000000000000', { decision: 'pass', reviewer: 'x' })).rejects.toMatchObject({
      status: 404,
      code: 'NOT_FOUND',
    });
    // The run's report while reviewed: CSV parsed back (the review in its row), XLSX and PDF by their signatures; a bad format is a typed 400.
    const reportCsv: Record<string, string>[] = parse(Buffer.from(await downloadReport(kb, run.id, 'csv')), { columns: true });
    expect(reportCsv.map((r) => [r.index, r.requirement])).toEqual(requirements.map((r) => [String(r.order_index), r.text]));
    expect(reportCsv[1]).toMatchObject({ review_decision: 'pass', reviewer: 'SDK reviewer', comment: 'Encryption is at rest only; accepted.' });
    expect(Buffer.from((await downloadReport(kb, run.id)).subarray(0, 2)).toString()).toBe('PK');
    expect(Buffer.from((await kb.runs.report(run.id, 'pdf')).subarray(0, 5)).toString()).toBe('%PDF-');
    await expect(downloadReport(kb, run.id, 'docx' as 'pdf')).rejects.toMatchObject({ status: 400, code: 'VALIDATION_ERROR' });
    await kb.reviews.clear(run.id, second.id);
    await clearRequirementReview(kb, run.id, second.id);
    expect((await kb.data(kb.api.GET('/api/v2/check/runs/{id}/requirements', { params: { path: { id: run.id } } })))[1].review).toBeNull();

    // Rerun (same requirements, source_run_id) and compare: pending until checked, then the machine's results side by side.
    const rerun = await kb.runs.rerun(run.id, { name: 'SDK rerun' });
    expect(rerun).toMatchObject({ name: 'SDK rerun', status: 'pending', source_run_id: run.id, total_requirements: 2, project_id: projectId });
    const beforeCheck = await compareCheckRuns(kb, run.id, rerun.id);
    expect(beforeCheck).toMatchObject({ run_id: run.id, with_run_id: rerun.id, summary: { unchanged: 0, changed: 2, only_in_run: 0, only_in_with: 0 } });
    expect(beforeCheck.changes.map((c) => [c.order_index, c.before?.result, c.after])).toEqual([
      [0, 'pass', { result: 'pending', score: null, evidence: [], sources: [] }],
      [1, 'fail', { result: 'pending', score: null, evidence: [], sources: [] }],
    ]);
    expect(await kb.runs.trigger(rerun.id)).toMatchObject({ run_id: rerun.id });
    expect((await waitForCheckRun(kb, rerun.id, { pollIntervalMs: 300 })).status).toBe('completed');
    const afterCheck = await kb.runs.compare(run.id, rerun.id);
    expect(afterCheck.summary.unchanged + afterCheck.summary.changed).toBe(2);
    expect(afterCheck.changes.every((c) => c.before !== null && c.after !== null && c.after.result !== 'pending')).toBe(true);
    expect((await rerunCheckRun(kb, run.id)).name).toBe('SDK run (rerun)');
    await expect(rerunCheckRun(kb, run.id, { name: '' })).rejects.toMatchObject({ status: 400, code: 'VALIDATION_ERROR' });
    await expect(rerunCheckRun(kb, '00000000-0000-4000-8000-000000000000')).rejects.toMatchObject({ status: 404, code: 'NOT_FOUND' });
    await expect(compareCheckRuns(kb, run.id, 'nope')).rejects.toMatchObject({ status: 400, code: 'VALIDATION_ERROR' });
    await expect(compareCheckRuns(kb, run.id, '00000000-0000-4000-8000-000000000000')).rejects.toMatchObject({ status: 404, code: 'NOT_FOUND' });

    // Stop applies to a run being processed: on a completed run it is a 409, thrown typed.
    await expect(kb.runs.stop(run.id)).rejects.toMatchObject({ status: 409, code: 'CONFLICT' });
    // Triggering again with reprocess checks everything anew.
    const again = await kb.data(
      kb.api.POST('/api/v2/check/runs/{id}/trigger', { params: { path: { id: run.id } }, body: { reprocess: true, skip_breakdown: true } }),
    );
    expect(again).toMatchObject({ run_id: run.id, status: 'processing' });
    // Stopped while processing: the run as it is now, stopped.
    const stopped = await kb.runs.stop(run.id).catch((e: unknown) => e);
    if (stopped instanceof KbConflictError) expect((await kb.runs.get(run.id)).status).toBe('completed');
    else expect(stopped).toMatchObject({ id: run.id, status: 'stopped' });
  });

  it('creates a batch with kb.batches, waits for it with few requests and exports its CSV', async () => {
    const created = await kb.batches.create({
      questions: ['Must employers notify employees exposed to toxic materials?', 'Who reviews alerts?'],
      name: 'SDK batch',
      project_id: projectId,
      chat_type: 'project',
    });
    expect(created.status).toBe('pending');
    const counts: number[] = [];
    const counted = countingClient();
    const started = Date.now();
    const done = await counted.kb.batches.wait(created.id, { onProgress: (b) => counts.push(b.processed_questions) });
    expect(done.status).toBe('completed');
    expect(counts[counts.length - 1]).toBe(2);
    const polls = counted.requests.filter((r) => r.startsWith('GET /api/v2/agent/batches?'));
    expect(counted.requests.filter((r) => !polls.includes(r))).toEqual([`GET /api/v2/agent/batches/${created.id}`]);
    expect(polls.length).toBeLessThanOrEqual(maxPolls(Date.now() - started));
    expect(await kb.batches.get(created.id)).toEqual(done);
    expect(await kb.batches.results(created.id)).toEqual(done.results);
    expect((await kb.batches.list({ projectId, status: 'completed' }).toArray()).map((b) => b.id)).toEqual([created.id]);
    expect(await kb.batches.export(created.id)).toBe(await exportBatch(kb, created.id));
    const csv = await exportBatch(kb, created.id);
    const rows = parse<Record<string, string>>(csv, { columns: true });
    expect(rows.map((r) => [r.index, r.question, r.status])).toEqual([
      ['0', 'Must employers notify employees exposed to toxic materials?', 'completed'],
      ['1', 'Who reviews alerts?', 'completed'],
    ]);
    expect(rows[0].answer).toBe(done.results[0].answer);
    const listed = await kb.page(kb.api.GET('/api/v2/agent/batches', { params: { query: { project_id: projectId } as never } }));
    expect((listed.data as Array<{ id: string }>).map((b) => b.id)).toEqual([created.id]);
  });

  it('retries a POST whose response was lost with the same Idempotency-Key: one project, the first response replayed', async () => {
    const keys: string[] = [];
    let dropped = false;
    const flaky = new KbClient({
      baseUrl: baseUrl(),
      apiKey: org.key,
      fetch: async (input, init) => {
        const request = new Request(input, init);
        keys.push(request.headers.get('idempotency-key') ?? '');
        const response = await fetch(request);
        if (!dropped) {
          dropped = true;
          throw new TypeError('fetch failed (connection reset after the server answered)');
        }
        return response;
      },
    });
    const { data, response } = await flaky.api.POST('/api/v2/projects', { body: { name: 'Exactly once' } });
    expect(response.headers.get('idempotent-replayed')).toBe('true');
    expect(keys).toHaveLength(2);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[1]).toBe(keys[0]);
    const all = await kb.page(kb.api.GET('/api/v2/projects', { params: { query: { limit: 200 } } }));
    expect(all.data.filter((p) => p.name === 'Exactly once').map((p) => p.id)).toEqual([data!.data.id]);
  });

  it('waits out a 429 for Retry-After and then succeeds', async () => {
    const limited = newOrg('E2E SDK limited', { rateLimit: 1 });
    const statuses: number[] = [];
    const client = new KbClient({
      baseUrl: baseUrl(),
      apiKey: limited.key,
      fetch: async (input, init) => {
        const response = await fetch(new Request(input, init));
        statuses.push(response.status);
        return response;
      },
    });
    expect(await client.data(client.api.GET('/api/v2/organization'))).toEqual({ id: limited.orgId, name: 'E2E SDK limited' });
    expect(await client.data(client.api.GET('/api/v2/organization'))).toEqual({ id: limited.orgId, name: 'E2E SDK limited' });
    expect(statuses).toEqual([200, 429, 200]);
    // With no retries left the 429 surfaces typed, with its Retry-After.
    const impatient = new KbClient({ baseUrl: baseUrl(), apiKey: limited.key, maxRetries: 0 });
    await impatient.data(impatient.api.GET('/api/v2/organization')).catch(() => undefined);
    const error = await impatient.data(impatient.api.GET('/api/v2/organization')).catch((e) => e);
    expect(error).toBeInstanceOf(KbRateLimitError);
    expect(error).toMatchObject({ status: 429, code: 'RATE_LIMITED' });
    expect(error.retryAfterSeconds).toBeGreaterThan(0);
    expect(error.retryAfter).toBe(error.retryAfterSeconds);
  });
});

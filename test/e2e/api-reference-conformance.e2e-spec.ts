import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import request from 'supertest';
import { api, baseUrl, corpusFile, newOrg, streamChat, uploadFile, waitForDocument } from './support/harness';

// Every operation of the served OpenAPI document, driven through a real flow (upload, process,
// query, chat, verify, a check run and its reports, a batch and its CSV): each response must have a status the
// operation declares, a declared content type, and a body valid against its schema (ajv, JSON
// Schema 2020-12, formats checked). schemathesis (schemathesis.e2e-spec.ts) covers the random
// inputs; this covers the successes a real client sees, with real resources.
jest.setTimeout(600_000);

type Json = Record<string, any>;
type Res = { status: number; headers: Record<string, string | string[] | undefined>; body?: unknown; text?: string };

describe('gateway: every response of a real flow conforms to the OpenAPI document', () => {
  const org = newOrg('Conformance Org');
  const a = api(org.key);
  let doc: Json;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  const exercised = new Map<string, Set<string>>();

  /** `res` of `METHOD /template` conforms: declared status, content type and schema. */
  function conform(method: string, template: string, res: Res): void {
    const where = `${method} ${template} → ${res.status}`;
    const op = doc.paths[template]?.[method.toLowerCase()];
    expect([where, Boolean(op)]).toEqual([where, true]);
    const declared = op.responses[String(res.status)];
    expect([where, Boolean(declared), res.status >= 400 ? JSON.stringify(res.body).slice(0, 300) : '']).toEqual([where, true, expect.any(String)]);
    const type = String(res.headers['content-type'] ?? '')
      .split(';')[0]
      .trim();
    if (res.status === 204) expect([where, declared.content]).toEqual([where, undefined]);
    else {
      expect([where, Object.keys(declared.content ?? {})]).toEqual([where, expect.arrayContaining([type])]);
      if (type === 'application/json') {
        const validate = ajv.compile({ ...declared.content[type].schema, components: doc.components });
        const ok = validate(res.body);
        expect([where, ok ? [] : validate.errors]).toEqual([where, []]);
      }
    }
    const key = `${method.toUpperCase()} ${template}`;
    exercised.set(key, (exercised.get(key) ?? new Set()).add(String(res.status)));
  }

  beforeAll(async () => {
    doc = (await request(baseUrl()).get('/docs/openapi.json')).body;
  });

  it('documents, chunks, projects, webhooks, answers, checks and batches: every success and the common errors', async () => {
    conform('GET', '/healthz', await request(baseUrl()).get('/healthz'));
    conform('GET', '/readyz', await request(baseUrl()).get('/readyz'));
    conform('GET', '/api/v2/organization', await a.get('/api/v2/organization'));

    const created = await a.post('/api/v2/projects').send({ name: 'Conformance', description: 'every operation' });
    conform('POST', '/api/v2/projects', created);
    const projectId = created.body.data.id;
    conform('GET', '/api/v2/projects', await a.get('/api/v2/projects?limit=5'));
    conform('GET', '/api/v2/projects/{id}', await a.get(`/api/v2/projects/${projectId}`));
    conform('PATCH', '/api/v2/projects/{id}', await a.patch(`/api/v2/projects/${projectId}`).send({ description: null }));
    conform('GET', '/api/v2/projects/{id}', await a.get('/api/v2/projects/6f1c2a9e-0000-4000-8000-000000000000'));
    conform('GET', '/api/v2/projects/{id}', await a.get('/api/v2/projects/not-a-uuid'));
    conform('POST', '/api/v2/projects', await a.post('/api/v2/projects').send({ name: '' }));

    // A webhook endpoint that nobody answers (port 9, discard): its deliveries fail and can be retried.
    const hook = await a.post('/api/v2/webhooks').send({ url: 'http://127.0.0.1:9/kb-events', events: ['document.completed'], description: 'conformance' });
    conform('POST', '/api/v2/webhooks', hook);
    const hookId = hook.body.data.id;
    conform('GET', '/api/v2/webhooks', await a.get('/api/v2/webhooks?limit=5'));
    conform('GET', '/api/v2/webhooks/{id}', await a.get(`/api/v2/webhooks/${hookId}`));
    conform('PATCH', '/api/v2/webhooks/{id}', await a.patch(`/api/v2/webhooks/${hookId}`).send({ description: 'conformance (renamed)' }));
    conform('GET', '/api/v2/webhooks/{id}', await a.get('/api/v2/webhooks/6f1c2a9e-0000-4000-8000-000000000000'));
    conform('POST', '/api/v2/webhooks', await a.post('/api/v2/webhooks').send({ url: 'ftp://example.com/x', events: ['document.completed'] }));

    const reserved = await a.post('/api/v2/documents').send({ file_name: 'spare.txt', content_type: 'text/plain', size_bytes: 12, project_id: projectId });
    conform('POST', '/api/v2/documents', reserved);
    const documentId = await uploadFile(org.key, { path: corpusFile('markdown/datica_11-incident_response_policy.md') }, projectId);
    const processed = await a.post('/api/v2/documents/process').send({ document_ids: [documentId, reserved.body.data.id] });
    conform('POST', '/api/v2/documents/process', processed);
    expect((await waitForDocument(org.key, documentId)).status).toBe('completed');
    conform('GET', '/api/v2/documents/{id}', await a.get(`/api/v2/documents/${documentId}`));
    // Document versions: a new version (201), bad `replaces` (400, 404), the superseded one (409), `current`.
    const v2Bytes = Buffer.from('Incident response policy, version 2: every alert is reviewed within 15 minutes.\n');
    const version = await a
      .post('/api/v2/documents')
      .send({ file_name: 'policy-v2.txt', content_type: 'text/plain', size_bytes: v2Bytes.length, project_id: projectId, replaces: documentId });
    conform('POST', '/api/v2/documents', version);
    const versionId: string = version.body.data.id;
    expect((await fetch(version.body.data.upload.url, { method: 'PUT', headers: { 'Content-Type': 'text/plain' }, body: v2Bytes })).status).toBe(200);
    expect((await a.post('/api/v2/documents/process').send({ document_ids: [versionId] })).body.data.processed).toEqual([versionId]);
    expect((await waitForDocument(org.key, versionId)).status).toBe('completed');
    conform(
      'POST',
      '/api/v2/documents',
      await a.post('/api/v2/documents').send({ file_name: 'x.txt', content_type: 'text/plain', size_bytes: 1, project_id: projectId, replaces: documentId }),
    );
    conform(
      'POST',
      '/api/v2/documents',
      await a
        .post('/api/v2/documents')
        .send({ file_name: 'x.txt', content_type: 'text/plain', size_bytes: 1, replaces: '6f1c2a9e-0000-4000-8000-000000000000' }),
    );
    conform(
      'POST',
      '/api/v2/documents',
      await a.post('/api/v2/documents').send({ file_name: 'x.txt', content_type: 'text/plain', size_bytes: 1, replaces: 'not-a-uuid' }),
    );
    conform('GET', '/api/v2/documents', await a.get(`/api/v2/documents?project_id=${projectId}&current=true`));
    conform('GET', '/api/v2/documents/{id}', await a.get(`/api/v2/documents/${documentId}`));
    conform('GET', '/api/v2/documents', await a.get(`/api/v2/documents?project_id=${projectId}&document_ids=${documentId}`));
    conform('GET', '/api/v2/documents/{id}/download', await a.get(`/api/v2/documents/${documentId}/download`));
    const chunkList = await a.get(`/api/v2/documents/${documentId}/chunks?limit=3`);
    conform('GET', '/api/v2/documents/{id}/chunks', chunkList);
    conform('GET', '/api/v2/documents/{id}/chunks/{node_id}', await a.get(`/api/v2/documents/${documentId}/chunks/${chunkList.body.data[0].node_id}`));
    conform('GET', '/api/v2/documents/{id}/chunks/{node_id}', await a.get(`/api/v2/documents/${documentId}/chunks/6f1c2a9e-0000-4000-8000-000000000000`));
    conform('GET', '/api/v2/documents/{id}/chunks', await a.get(`/api/v2/documents/${reserved.body.data.id}/chunks`));
    // Page sizes (decisions.md "Where a quote stands"): a PDF's page (200), past its last page and a
    // format without pages (404), a bad page number (400).
    const pdfId = await uploadFile(org.key, { path: corpusFile('pdf/dol_msha-7000-1_mine_accident_report.pdf') }, projectId);
    expect((await a.post('/api/v2/documents/process').send({ document_ids: [pdfId] })).status).toBe(200);
    expect((await waitForDocument(org.key, pdfId)).status).toBe('completed');
    conform('GET', '/api/v2/documents/{id}/pages/{n}', await a.get(`/api/v2/documents/${pdfId}/pages/1`));
    conform('GET', '/api/v2/documents/{id}/pages/{n}', await a.get(`/api/v2/documents/${pdfId}/pages/2`));
    conform('GET', '/api/v2/documents/{id}/pages/{n}', await a.get(`/api/v2/documents/${documentId}/pages/1`));
    conform('GET', '/api/v2/documents/{id}/pages/{n}', await a.get(`/api/v2/documents/${pdfId}/pages/0`));

    // The document.completed event reached the endpoint's delivery log; retry it.
    let deliveries = await a.get(`/api/v2/webhooks/${hookId}/deliveries`);
    for (let i = 0; i < 100 && deliveries.body.data.length === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      deliveries = await a.get(`/api/v2/webhooks/${hookId}/deliveries`);
    }
    conform('GET', '/api/v2/webhooks/{id}/deliveries', deliveries);
    expect(deliveries.body.data[0].event).toBe('document.completed');
    conform(
      'POST',
      '/api/v2/webhooks/{id}/deliveries/{delivery_id}/retry',
      await a.post(`/api/v2/webhooks/${hookId}/deliveries/${deliveries.body.data[0].id}/retry`),
    );
    conform('DELETE', '/api/v2/webhooks/{id}', await a.delete(`/api/v2/webhooks/${hookId}`));
    conform('DELETE', '/api/v2/webhooks/{id}', await a.delete(`/api/v2/webhooks/${hookId}`));

    conform(
      'POST',
      '/api/v2/check/verify',
      await a.post('/api/v2/check/verify').send({ project_id: projectId, requirement: 'Security incidents must be reported to the security officer.' }),
    );
    const run = await a.post('/api/v2/check/runs').send({
      project_id: projectId,
      name: 'Conformance run',
      requirements: [{ text: 'Incidents are reported promptly.', metadata: { row: 1 } }, { text: 'Employees receive incident response training.' }],
    });
    conform('POST', '/api/v2/check/runs', run);
    const runId = run.body.data.id;
    conform('POST', '/api/v2/check/runs/{id}/stop', await a.post(`/api/v2/check/runs/${runId}/stop`));
    conform('POST', '/api/v2/check/runs/{id}/trigger', await a.post(`/api/v2/check/runs/${runId}/trigger`).send({ skip_breakdown: true }));
    conform('GET', '/api/v2/check/runs', await a.get(`/api/v2/check/runs?project_id=${projectId}`));
    for (let i = 0; i < 400; i++) {
      const r = await a.get(`/api/v2/check/runs/${runId}`);
      if (['completed', 'failed', 'stopped'].includes(r.body.data.status) || i === 399) {
        conform('GET', '/api/v2/check/runs/{id}', r);
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    const requirements = await a.get(`/api/v2/check/runs/${runId}/requirements`);
    conform('GET', '/api/v2/check/runs/{id}/requirements', requirements);
    // Reviews: set (the requirement with its review), the run detail and requirements showing it, a bad body, removal.
    const reviewTemplate = '/api/v2/check/runs/{id}/requirements/{requirement_id}/review';
    const reviewPath = `/api/v2/check/runs/${runId}/requirements/${requirements.body.data[0].id}/review`;
    const reviewed = await a.put(reviewPath).send({ decision: 'fail', reviewer: 'Conformance reviewer', comment: 'Checked by hand.' });
    conform('PUT', reviewTemplate, reviewed);
    expect(reviewed.status).toBe(200);
    conform('PUT', reviewTemplate, await a.put(reviewPath).send({ decision: 'pass', reviewer: 'Conformance reviewer', comment: null }));
    conform('PUT', reviewTemplate, await a.put(reviewPath).send({ decision: 'maybe', reviewer: '' }));
    conform('GET', '/api/v2/check/runs/{id}', await a.get(`/api/v2/check/runs/${runId}`));
    conform('GET', '/api/v2/check/runs/{id}/requirements', await a.get(`/api/v2/check/runs/${runId}/requirements`));
    conform('DELETE', reviewTemplate, await a.delete(reviewPath));
    conform('DELETE', reviewTemplate, await a.delete(`/api/v2/check/runs/${runId}/requirements/00000000-0000-4000-8000-000000000000/review`));
    // Rerun (a new pending run naming its source) and compare (the rerun still pending: its requirements compare as pending).
    const rerun = await a.post(`/api/v2/check/runs/${runId}/rerun`).send({});
    conform('POST', '/api/v2/check/runs/{id}/rerun', rerun);
    expect(rerun.status).toBe(201);
    conform('POST', '/api/v2/check/runs/{id}/rerun', await a.post(`/api/v2/check/runs/${runId}/rerun`).send({ name: '' }));
    const compared = await a.get(`/api/v2/check/runs/${runId}/compare?with=${rerun.body.data.id}`);
    conform('GET', '/api/v2/check/runs/{id}/compare', compared);
    expect(compared.status).toBe(200);
    conform('GET', '/api/v2/check/runs/{id}/compare', await a.get(`/api/v2/check/runs/${runId}/compare?with=nope`));
    conform('GET', '/api/v2/check/runs/{id}/compare', await a.get(`/api/v2/check/runs/${runId}/compare?with=00000000-0000-4000-8000-000000000000`));
    // Reports: each format of the completed run, a bad format, a pending run (409).
    const reportTemplate = '/api/v2/check/runs/{id}/report';
    for (const format of ['xlsx', 'csv', 'pdf']) {
      const report = await a.get(`/api/v2/check/runs/${runId}/report?format=${format}`);
      conform('GET', reportTemplate, report);
      expect([format, report.status]).toEqual([format, 200]);
    }
    conform('GET', reportTemplate, await a.get(`/api/v2/check/runs/${runId}/report?format=docx`));
    const pendingRun = await a
      .post('/api/v2/check/runs')
      .send({ project_id: projectId, name: 'Conformance pending run', requirements: [{ text: 'Not checked yet.' }] });
    const pendingReport = await a.get(`/api/v2/check/runs/${pendingRun.body.data.id}/report`);
    conform('GET', reportTemplate, pendingReport);
    expect(pendingReport.status).toBe(409);
    // A run stopped while processing (a long run, stopped right after its trigger).
    const long = await a.post('/api/v2/check/runs').send({
      project_id: projectId,
      name: 'Conformance run to stop',
      requirements: Array.from({ length: 40 }, (_, i) => ({ text: `Requirement ${i + 1}: incidents of class ${i + 1} are reported within ${i + 2} hours.` })),
    });
    expect((await a.post(`/api/v2/check/runs/${long.body.data.id}/trigger`).send({})).status).toBe(200);
    const stopped = await a.post(`/api/v2/check/runs/${long.body.data.id}/stop`);
    conform('POST', '/api/v2/check/runs/{id}/stop', stopped);
    expect(stopped.status).toBe(200);
    const stoppedRequirement = (await a.get(`/api/v2/check/runs/${long.body.data.id}/requirements`)).body.data.find((r: Json) => r.status !== 'completed');
    if (stoppedRequirement) {
      const notCompleted = await a
        .put(`/api/v2/check/runs/${long.body.data.id}/requirements/${stoppedRequirement.id}/review`)
        .send({ decision: 'pass', reviewer: 'Conformance reviewer' });
      conform('PUT', '/api/v2/check/runs/{id}/requirements/{requirement_id}/review', notCompleted);
      expect(notCompleted.status).toBe(409);
    }
    conform('GET', reportTemplate, await a.get(`/api/v2/check/runs/${long.body.data.id}/report?format=csv`));

    const question = 'Who must security incidents be reported to?';
    conform('POST', '/api/v2/agent/query', await a.post('/api/v2/agent/query').send({ question, project_id: projectId, chat_type: 'project' }));
    conform(
      'POST',
      '/api/v2/chat',
      await a.post('/api/v2/chat').send({ messages: [{ role: 'user', content: question }], project_id: projectId, chat_type: 'project' }),
    );
    conform('POST', '/api/v2/chat', await a.post('/api/v2/chat').send({ messages: [{ role: 'user', content: question }], chat_type: 'safety' }));
    const streamed = await streamChat(org.key, { messages: [{ role: 'user', content: question }], project_id: projectId, chat_type: 'project' });
    conform('POST', '/api/v2/chat', { status: streamed.res.status, headers: Object.fromEntries(streamed.res.headers) });
    const eventSchema = ajv.compile({ $ref: '#/components/schemas/ChatStreamEvent', components: doc.components });
    expect(streamed.events.map((e) => e.event)).toEqual(expect.arrayContaining(['meta', 'delta', 'citations', 'done']));
    // Each event as sent (`data` is JSON text), then its parsed `data` against the event's model
    // (the `contentSchema` of its `data`: ajv treats content keywords as annotations only).
    const branches: Json[] = doc.components.schemas.ChatStreamEvent.oneOf;
    for (const e of streamed.events) {
      expect([e.event, eventSchema({ event: e.event, data: e.data }) ? [] : eventSchema.errors]).toEqual([e.event, []]);
      const model = branches.find((b) => b.properties.event.const === e.event)?.properties.data.contentSchema;
      const dataSchema = ajv.compile({ ...model, components: doc.components });
      expect([e.event, dataSchema(JSON.parse(e.data)) ? [] : dataSchema.errors]).toEqual([e.event, []]);
    }

    const batch = await a
      .post('/api/v2/agent/batches')
      .send({ questions: [question, 'How fast must incidents be reported?'], name: 'Conformance batch', project_id: projectId, chat_type: 'project' });
    conform('POST', '/api/v2/agent/batches', batch);
    const batchId = batch.body.data.id;
    conform('GET', '/api/v2/agent/batches', await a.get(`/api/v2/agent/batches?project_id=${projectId}`));
    for (let i = 0; i < 400; i++) {
      const r = await a.get(`/api/v2/agent/batches/${batchId}`);
      if (['completed', 'failed'].includes(r.body.data.status) || i === 399) {
        conform('GET', '/api/v2/agent/batches/{id}', r);
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    const csv = await a.get(`/api/v2/agent/batches/${batchId}/export`);
    conform('GET', '/api/v2/agent/batches/{id}/export', csv);
    expect(csv.text.split('\r\n')[0]).toBe('index,question,status,answer,sources,error');

    conform('DELETE', '/api/v2/projects/{id}', await a.delete(`/api/v2/projects/${projectId}`));
    conform('DELETE', '/api/v2/documents', await a.delete('/api/v2/documents').send({ document_ids: [documentId, reserved.body.data.id, versionId, pdfId] }));
    conform('DELETE', '/api/v2/projects/{id}', await a.delete(`/api/v2/projects/${projectId}`));

    // The audit log of every change above: filtered, paged, and a 400 for a bad filter.
    const audit = await a.get(`/api/v2/audit-events?resource_type=project&resource_id=${projectId}&limit=5`);
    conform('GET', '/api/v2/audit-events', audit);
    expect(audit.status).toBe(200);
    expect(audit.body.data[0].action).toBe('project.deleted');
    conform('GET', '/api/v2/audit-events', await a.get('/api/v2/audit-events?since=yesterday'));

    // Every operation of the document was driven to a success at least once.
    const operations = Object.entries(doc.paths as Json).flatMap(([p, item]) => Object.keys(item as Json).map((m) => `${m.toUpperCase()} ${p}`));
    const withoutSuccess = operations.filter((o) => ![...(exercised.get(o) ?? [])].some((s) => s.startsWith('2')));
    expect(withoutSuccess).toEqual([]);
  });
});

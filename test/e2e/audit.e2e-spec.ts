import { api, kbctl, newOrg, uploadFile, waitForDocument, waitForRun } from './support/harness';
import { startReceiver } from './support/webhook-receiver';

jest.setTimeout(600_000);

/**
 * The audit log end to end (decisions.md "Audit log", docs/audit.md): one change of each kind
 * through the real stack — gateway, documents, check, agent, webhooks services and kbctl — each
 * writing its event in its own transaction, read back with GET /api/v2/audit-events: action,
 * resource, actor (API key id and name, reviewer), request id = the response's X-Request-Id,
 * before/after; another organization sees none; filters and pagination; failed calls and
 * idempotent replays write nothing; a deleted project's events remain.
 */
const PLAN = `Harbour Yard Safety Plan

Visitors must sign in at the gate house before entering the yard.
Hard hats are required at all times on the quay.
`;

describe('audit log', () => {
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let key: string;
  let orgId: string;
  let keyId: string;
  const other = newOrg('E2E Audit Other');
  /** request id of each call, by a label. */
  const rid: Record<string, string> = {};
  let projectId: string;
  let docId: string;
  let run: any;
  let rerunId: string;
  let stopRunId: string;
  let batchId: string;
  let hookId: string;

  const events = async (query: Record<string, string | number> = {}, k = key) => {
    const res = await api(k).get('/api/v2/audit-events').query(query);
    expect(res.status).toBe(200);
    return res.body;
  };
  /** The one event of `action` on `resourceId`. */
  const one = async (action: string, resourceId: string) => {
    const body = await events({ action, resource_id: resourceId });
    expect(body.data).toHaveLength(1);
    return body.data[0];
  };
  /** Sends a change and remembers the request id the gateway answered with. */
  const track = async (label: string, req: any) => {
    const res = await req.set('X-Request-Id', `audit-${label}`);
    expect(res.headers['x-request-id']).toBe(`audit-${label}`);
    rid[label] = res.headers['x-request-id'];
    return res;
  };

  beforeAll(async () => {
    receiver = await startReceiver();
    ({ key, orgId } = newOrg('E2E Audit'));
    keyId = kbctl('key', 'list', '--org', orgId).keys[0].id;
    // An operator change through kbctl.
    kbctl('org', 'quota', '--org', orgId, '--requests', '100000');

    projectId = (await track('project-create', api(key).post('/api/v2/projects').send({ name: 'Harbour', description: 'yard' }))).body.data.id;
    expect((await track('project-update', api(key).patch(`/api/v2/projects/${projectId}`).send({ name: 'Harbour Yard' }))).status).toBe(200);
    docId = await uploadFile(key, { bytes: Buffer.from(PLAN), name: 'harbour-plan.txt', contentType: 'text/plain' }, projectId);
    const processing = api(key)
      .post('/api/v2/documents/process')
      .send({ document_ids: [docId] });
    expect((await track('process', processing)).status).toBe(200);
    expect((await waitForDocument(key, docId)).status).toBe('completed');

    const created = await track(
      'run-create',
      api(key)
        .post('/api/v2/check/runs')
        .send({ project_id: projectId, name: 'Audit me', requirements: [{ text: 'Visitors must sign in at the gate house.' }] }),
    );
    expect(created.status).toBe(201);
    expect((await track('run-trigger', api(key).post(`/api/v2/check/runs/${created.body.data.id}/trigger`).send({ skip_breakdown: true }))).status).toBe(200);
    run = await waitForRun(key, created.body.data.id, ['completed']);
    const rerun = await track('run-rerun', api(key).post(`/api/v2/check/runs/${run.id}/rerun`).send({}));
    expect(rerun.status).toBe(201);
    rerunId = rerun.body.data.id;

    // A run long enough to be stopped while it is processing.
    const long = await api(key)
      .post('/api/v2/check/runs')
      .send({
        project_id: projectId,
        name: 'Stop me',
        requirements: Array.from({ length: 300 }, (_, i) => ({ text: `Requirement number ${i} about hard hats on the quay.` })),
      });
    stopRunId = long.body.data.id;
    expect((await api(key).post(`/api/v2/check/runs/${stopRunId}/trigger`).send({ skip_breakdown: true })).status).toBe(200);
    expect((await track('run-stop', api(key).post(`/api/v2/check/runs/${stopRunId}/stop`).send())).status).toBe(200);

    const review = `/api/v2/check/runs/${run.id}/requirements/${run.requirements[0].id}/review`;
    expect((await track('review-set', api(key).put(review).send({ decision: 'fail', reviewer: 'Dana Reviewer', comment: 'old edition' }))).status).toBe(200);
    expect((await track('review-replace', api(key).put(review).send({ decision: 'pass', reviewer: 'Lee Auditor' }))).status).toBe(200);
    expect((await track('review-clear', api(key).delete(review))).status).toBe(204);

    const batch = await track(
      'batch-create',
      api(key)
        .post('/api/v2/agent/batches')
        .send({ questions: ['Who signs in at the gate house?'], name: 'Audit batch' }),
    );
    expect(batch.status).toBe(201);
    batchId = batch.body.data.id;
    const hook = await track(
      'hook-create',
      api(key)
        .post('/api/v2/webhooks')
        .send({ url: receiver.url('/audit'), events: ['document.deleted'] }),
    );
    expect(hook.status).toBe(201);
    hookId = hook.body.data.id;
    expect((await track('hook-update', api(key).patch(`/api/v2/webhooks/${hookId}`).send({ enabled: false }))).status).toBe(200);
    expect((await track('hook-delete', api(key).delete(`/api/v2/webhooks/${hookId}`))).status).toBe(204);
  });
  afterAll(async () => {
    await receiver?.close();
  });

  it('records project creation and update (before/after) with the API key and the request id', async () => {
    const createdEvent = await one('project.created', projectId);
    expect(createdEvent).toMatchObject({
      org_id: orgId,
      resource_type: 'project',
      resource_id: projectId,
      actor: { api_key_id: keyId, api_key_name: 'E2E Audit key' },
      data: { after: { name: 'Harbour', description: 'yard' } },
      request_id: rid['project-create'],
    });
    expect(new Date(createdEvent.created_at).toISOString()).toBe(createdEvent.created_at);
    expect(await one('project.updated', projectId)).toMatchObject({
      data: { before: { name: 'Harbour' }, after: { name: 'Harbour Yard' } },
      request_id: rid['project-update'],
      actor: { api_key_id: keyId, api_key_name: 'E2E Audit key' },
    });
  });

  it('records document upload slot, processing, check run create/trigger/rerun/stop, batch and webhook endpoint changes', async () => {
    expect(await one('document.created', docId)).toMatchObject({
      resource_type: 'document',
      data: { after: { file_name: 'harbour-plan.txt', project_id: projectId } },
    });
    expect(await one('document.process_requested', docId)).toMatchObject({
      request_id: rid.process,
      data: { before: { status: 'awaiting_upload' }, after: { status: 'processing' } },
    });
    expect(await one('check_run.created', run.id)).toMatchObject({
      resource_type: 'check_run',
      request_id: rid['run-create'],
      data: { after: { name: 'Audit me', project_id: projectId, total_requirements: 1 } },
    });
    expect(await one('check_run.triggered', run.id)).toMatchObject({
      request_id: rid['run-trigger'],
      data: { skip_breakdown: true, before: { status: 'pending' } },
    });
    expect(await one('check_run.rerun', rerunId)).toMatchObject({ request_id: rid['run-rerun'], data: { source_run_id: run.id } });
    expect(await one('check_run.stopped', stopRunId)).toMatchObject({
      request_id: rid['run-stop'],
      data: { before: { status: 'processing' }, after: { status: 'stopped' } },
    });
    expect(await one('batch.created', batchId)).toMatchObject({ resource_type: 'batch', request_id: rid['batch-create'], actor: { api_key_id: keyId } });
    const hookEvent = await one('webhook_endpoint.created', hookId);
    expect(hookEvent).toMatchObject({ request_id: rid['hook-create'], data: { after: { events: ['document.deleted'], enabled: true } } });
    expect(JSON.stringify(hookEvent)).not.toContain('whsec_');
    expect(await one('webhook_endpoint.updated', hookId)).toMatchObject({ data: { before: { enabled: true }, after: { enabled: false } } });
    expect(await one('webhook_endpoint.deleted', hookId)).toMatchObject({ request_id: rid['hook-delete'] });
  });

  it('records reviews with before/after and the reviewer, newest first', async () => {
    const reqId = run.requirements[0].id;
    const body = await events({ resource_type: 'requirement', resource_id: reqId });
    expect(body.data.map((e: any) => e.action)).toEqual(['requirement.review_removed', 'requirement.reviewed', 'requirement.reviewed']);
    const [removed, replaced, set] = body.data;
    expect(set).toMatchObject({
      request_id: rid['review-set'],
      actor: { api_key_id: keyId, reviewer: 'Dana Reviewer' },
      data: { run_id: run.id, before: null, after: { decision: 'fail', reviewer: 'Dana Reviewer', comment: 'old edition' } },
    });
    expect(replaced).toMatchObject({
      request_id: rid['review-replace'],
      actor: { reviewer: 'Lee Auditor' },
      data: { before: { decision: 'fail' }, after: { decision: 'pass', reviewer: 'Lee Auditor', comment: null } },
    });
    expect(removed).toMatchObject({ request_id: rid['review-clear'], actor: { reviewer: 'Lee Auditor' }, data: { before: { decision: 'pass' }, after: null } });
  });

  it('records operator (kbctl) changes with an operator actor', async () => {
    expect(await one('organization.created', orgId)).toMatchObject({
      actor: { api_key_id: null, api_key_name: null, operator: 'kbctl' },
      request_id: null,
      data: { after: { name: 'E2E Audit' } },
    });
    expect(await one('api_key.created', keyId)).toMatchObject({ actor: { operator: 'kbctl' }, data: { after: { name: 'E2E Audit key' } } });
    expect(await one('organization.updated', orgId)).toMatchObject({
      data: { before: { monthly_request_quota: null }, after: { monthly_request_quota: 100000 } },
    });
  });

  it('writes nothing for failed calls (400, 404, 409) or an idempotent replay', async () => {
    const before = (await events()).pagination.total;
    expect((await api(key).patch(`/api/v2/projects/${projectId}`).send({ name: '' })).status).toBe(400);
    expect((await api(key).post('/api/v2/check/runs').send({ project_id: projectId, name: 'x', requirements: [] })).status).toBe(400);
    expect((await api(other.key).patch(`/api/v2/projects/${projectId}`).send({ name: 'Stolen' })).status).toBe(404);
    expect((await api(key).delete(`/api/v2/projects/${projectId}`)).status).toBe(409); // still has a document
    expect((await api(key).post(`/api/v2/check/runs/${run.id}/stop`).send()).status).toBe(409);
    expect((await events()).pagination.total).toBe(before);

    const first = await api(key).post('/api/v2/projects').set('Idempotency-Key', 'audit-once').send({ name: 'Once' });
    const replay = await api(key).post('/api/v2/projects').set('Idempotency-Key', 'audit-once').send({ name: 'Once' });
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body.data.id).toBe(first.body.data.id);
    expect((await events({ action: 'project.created', resource_id: first.body.data.id })).pagination.total).toBe(1);
    expect((await events()).pagination.total).toBe(before + 1);
  });

  it("shows another organization none of these events, and filters and pages the caller's", async () => {
    const theirs = await events({ limit: 200 }, other.key);
    expect(theirs.data.every((e: any) => e.org_id === other.orgId)).toBe(true);
    expect(theirs.data.map((e: any) => e.action).sort()).toEqual(['api_key.created', 'organization.created']);
    expect((await events({ resource_id: projectId }, other.key)).pagination.total).toBe(0);

    const all = await events({ limit: 200 });
    const times = all.data.map((e: any) => e.created_at);
    expect([...times].sort().reverse()).toEqual(times);
    const page = await events({ limit: 2, offset: 1 });
    expect(page.pagination).toEqual({ limit: 2, offset: 1, total: all.pagination.total });
    expect(page.data.map((e: any) => e.id)).toEqual(all.data.slice(1, 3).map((e: any) => e.id));
    const window = await events({ since: all.data[2].created_at, until: all.data[0].created_at, limit: 200 });
    expect(window.data.every((e: any) => e.created_at >= all.data[2].created_at && e.created_at < all.data[0].created_at)).toBe(true);
    expect((await events({ resource_type: 'check_run', action: 'check_run.triggered' })).data.map((e: any) => e.resource_id).sort()).toEqual(
      [run.id, stopRunId].sort(),
    );
  });

  it('answers 400 in the envelope for bad filters', async () => {
    for (const query of [
      { since: 'yesterday' },
      { until: '2026-13-40T00:00:00Z' },
      { since: '2026-02-01T00:00:00Z', until: '2026-01-01T00:00:00Z' },
      { action: 'created' },
      { resource_type: 'Project!' },
      { limit: 0 },
      { offset: -1 },
      { resource_id: 'a b' },
    ]) {
      const res = await api(key).get('/api/v2/audit-events').query(query);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ success: false, error: { code: 'VALIDATION_ERROR' } });
    }
  });

  it("keeps a deleted project's events (and its documents' deletion)", async () => {
    const deletion = api(key)
      .delete('/api/v2/documents')
      .send({ document_ids: [docId] });
    expect((await track('doc-delete', deletion)).status).toBe(200);
    // Runs keep referring to the project; delete it once its documents are gone.
    expect((await track('project-delete', api(key).delete(`/api/v2/projects/${projectId}`))).status).toBe(204);
    expect(await one('document.deleted', docId)).toMatchObject({ request_id: rid['doc-delete'], data: { before: { file_name: 'harbour-plan.txt' } } });
    const body = await events({ resource_type: 'project', resource_id: projectId });
    expect(body.data.map((e: any) => e.action)).toEqual(['project.deleted', 'project.updated', 'project.created']);
    expect(body.data[0]).toMatchObject({ request_id: rid['project-delete'], data: { before: { name: 'Harbour Yard', description: 'yard' } } });
  });
});

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Webhook } from 'standardwebhooks';
import { DataSource } from 'typeorm';
import { batchEvents } from '../../apps/agent/src/batches/batch-events';
import { BatchesRepository } from '../../apps/agent/src/batches/batches.repository';
import { runEvents } from '../../apps/check/src/runs/run-events';
import { RunsRepository } from '../../apps/check/src/runs/runs.repository';
import { api, corpusFile, newOrg, uploadFile, waitForDocument, waitForRun } from './support/harness';
import { ReceivedWebhook, startReceiver } from './support/webhook-receiver';

jest.setTimeout(600_000);

/**
 * Webhooks end to end (decisions.md "Webhooks", docs/webhooks.md) against the suite's stack,
 * started with WEBHOOK_RETRY_BASE_MS=300, WEBHOOK_TIMEOUT_MS=3000 and WEBHOOK_ALLOW_PRIVATE=true
 * (global-setup), and real HTTP receivers on 127.0.0.1.
 */
describe('webhooks', () => {
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  const schemaDb = async (schema: string) => {
    const ds = new DataSource({ type: 'postgres', url: process.env.KB_E2E_DATABASE_URL!, extra: { max: 2, options: `-c search_path=${schema}` } });
    return ds.initialize();
  };

  beforeAll(async () => {
    receiver = await startReceiver((r, nth) => {
      if (r.path === '/flaky') return nth <= 3 ? 500 : 200;
      if (r.path === '/hang') return nth === 1 ? 'hang' : 200;
      return 200;
    });
  });
  afterAll(async () => {
    await receiver.close();
  });

  const create = (key: string, body: object) => api(key).post('/api/v2/webhooks').send(body);
  const verified = (secret: string, r: ReceivedWebhook) => new Webhook(secret).verify(r.body, r.headers) as any;

  it('manages endpoints: validation errors in the envelope, the secret shown once, 404 for another org', async () => {
    const org = newOrg('E2E Webhooks CRUD');
    const other = newOrg('E2E Webhooks CRUD other');
    for (const [body, words] of [
      [{ url: receiver.url('/x'), events: [] }, 'events'],
      [{ url: receiver.url('/x'), events: ['document.exploded'] }, 'document.exploded'],
      [{ url: receiver.url('/x'), events: ['*', 'document.ready'] }, '"*"'],
      [{ url: 'ftp://example.com/x', events: ['*'] }, 'url'],
      [{ url: 'not a url', events: ['*'] }, 'url'],
      [{ events: ['*'] }, 'url'],
    ] as const) {
      const res = await create(org.key, body);
      expect(res.status).toBe(400);
      expect(res.body.success).toBe(false);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
      expect(res.body.error.message).toContain(words);
    }
    const created = await create(org.key, { url: receiver.url('/crud'), events: ['document.ready', 'document.ready', 'batch.failed'], description: 'first' });
    expect(created.status).toBe(201);
    const hook = created.body.data;
    expect(hook).toMatchObject({
      org_id: org.orgId,
      url: receiver.url('/crud'),
      events: ['document.ready', 'batch.failed'],
      description: 'first',
      enabled: true,
    });
    expect(hook.secret).toMatch(/^whsec_[A-Za-z0-9+/=]{40,}$/);

    const got = (await api(org.key).get(`/api/v2/webhooks/${hook.id}`)).body.data;
    expect(got.secret).toBeUndefined();
    expect(got).toEqual({ ...hook, secret: undefined });
    const list = await api(org.key).get('/api/v2/webhooks?limit=1');
    expect(list.body.pagination).toMatchObject({ limit: 1, offset: 0, total: 1 });
    expect(list.body.data.map((h: any) => h.id)).toEqual([hook.id]);
    expect(list.body.data[0].secret).toBeUndefined();

    const patched = await api(org.key)
      .patch(`/api/v2/webhooks/${hook.id}`)
      .send({ events: ['*'], description: null, enabled: false });
    expect(patched.status).toBe(200);
    expect(patched.body.data).toMatchObject({ events: ['*'], description: null, enabled: false, url: hook.url });
    expect((await api(org.key).patch(`/api/v2/webhooks/${hook.id}`).send({})).body.error.code).toBe('VALIDATION_ERROR');
    expect((await api(org.key).patch(`/api/v2/webhooks/${hook.id}`).send({ enabled: 'yes' })).status).toBe(400);

    // Another organization sees nothing of it.
    for (const res of [
      await api(other.key).get(`/api/v2/webhooks/${hook.id}`),
      await api(other.key).patch(`/api/v2/webhooks/${hook.id}`).send({ enabled: true }),
      await api(other.key).get(`/api/v2/webhooks/${hook.id}/deliveries`),
      await api(other.key).post(`/api/v2/webhooks/${hook.id}/deliveries/${hook.id}/retry`),
      await api(other.key).delete(`/api/v2/webhooks/${hook.id}`),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('NOT_FOUND');
    }
    expect((await api(other.key).get('/api/v2/webhooks')).body.data).toEqual([]);
    expect((await api(org.key).get(`/api/v2/webhooks/not-a-uuid`)).status).toBe(400);

    expect((await api(org.key).delete(`/api/v2/webhooks/${hook.id}`)).status).toBe(204);
    expect((await api(org.key).get(`/api/v2/webhooks/${hook.id}`)).status).toBe(404);
  });

  it("delivers all nine events, signed with the published secret, in order per resource, and never another organization's", async () => {
    const org = newOrg('E2E Webhooks events');
    const other = newOrg('E2E Webhooks events other');
    const mine = (await create(org.key, { url: receiver.url('/events'), events: ['*'] })).body.data;
    const theirs = (await create(other.key, { url: receiver.url('/other'), events: ['*'] })).body.data;
    const a = api(org.key);

    // Documents: ready → completed → deleted, and a file that cannot be read → failed.
    const projectId = (await a.post('/api/v2/projects').send({ name: 'Webhooks project' })).body.data.id;
    const good = await uploadFile(org.key, { path: corpusFile('markdown/datica_11-incident_response_policy.md') }, projectId);
    const bad = await uploadFile(org.key, { bytes: Buffer.from('%PDF-1.7\nthis is not a PDF at all\n'), name: 'broken.pdf' });
    await a.post('/api/v2/documents/process').send({ document_ids: [good, bad] });
    expect((await waitForDocument(org.key, good)).status).toBe('completed');
    expect((await waitForDocument(org.key, bad)).status).toBe('failed');
    const goodDoc = (await a.get(`/api/v2/documents/${good}`)).body.data;
    const badDoc = (await a.get(`/api/v2/documents/${bad}`)).body.data;

    // The other organization's activity must never reach this org's endpoint (and vice versa).
    const foreign = await uploadFile(other.key, { bytes: Buffer.from('# Other\n\nNothing to see.\n'), name: 'other.md' });
    await api(other.key)
      .delete('/api/v2/documents')
      .send({ document_ids: [foreign] });

    // Check runs: completed, stopped, failed.
    const run = async (n: number) =>
      (
        await a.post('/api/v2/check/runs').send({
          project_id: projectId,
          name: `run of ${n}`,
          requirements: Array.from({ length: n }, (_, i) => ({ text: `Incidents must be reported to the security officer (item ${i}).` })),
        })
      ).body.data;
    const completedRun = await run(1);
    await a.post(`/api/v2/check/runs/${completedRun.id}/trigger`).send({ skip_breakdown: true });
    const stoppedRun = await run(40);
    await a.post(`/api/v2/check/runs/${stoppedRun.id}/trigger`).send({});
    expect((await a.post(`/api/v2/check/runs/${stoppedRun.id}/stop`)).status).toBe(200);
    // A run fails when its worker gives up (model provider unreachable, last attempt): the
    // worker's own repository call, made here on a processing run.
    const failedRun = await run(40);
    await a.post(`/api/v2/check/runs/${failedRun.id}/trigger`).send({});
    const checkDb = await schemaDb('check');
    try {
      const [{ generation }] = await checkDb.query('SELECT generation FROM check_runs WHERE id = $1', [failedRun.id]);
      expect(
        await new RunsRepository(checkDb, runEvents).fail(org.orgId, failedRun.id, generation, 'The configured model provider is unreachable after retries.'),
      ).toBe(true);
    } finally {
      await checkDb.destroy();
    }

    // Batches: completed; failed (the path taken when its questions cannot be queued).
    const batch = (await a.post('/api/v2/agent/batches').send({ questions: ['What triggers the incident response plan?'], project_id: projectId })).body.data;
    const failedBatch = (await a.post('/api/v2/agent/batches').send({ questions: Array.from({ length: 30 }, (_, i) => `Question ${i}?`) })).body.data;
    const agentDb = await schemaDb('agent');
    try {
      expect(await new BatchesRepository(agentDb, batchEvents).markFailed(failedBatch.id)).toBe(true);
    } finally {
      await agentDb.destroy();
    }

    // Delete the good document last: document.deleted must come after its ready and completed.
    const completedRunData = await waitForRun(org.key, completedRun.id, ['completed']);
    await a.delete('/api/v2/documents').send({ document_ids: [good] });

    const types = () => receiver.at('/events').map((r) => `${r.event.type}:${r.event.data.id}`);
    const expected = [
      `document.ready:${good}`,
      `document.completed:${good}`,
      `document.deleted:${good}`,
      `document.failed:${bad}`,
      `check_run.completed:${completedRun.id}`,
      `check_run.stopped:${stoppedRun.id}`,
      `check_run.failed:${failedRun.id}`,
      `batch.completed:${batch.id}`,
      `batch.failed:${failedBatch.id}`,
    ];
    await receiver.waitFor(() => expected.every((e) => types().includes(e)), 300_000, 'all nine events');

    const events = receiver.at('/events');
    for (const r of events) {
      // Standard Webhooks: the signature verifies with the secret shown at creation.
      const payload = verified(mine.secret, r);
      expect(Object.keys(payload).sort()).toEqual(['created_at', 'data', 'id', 'org_id', 'type']);
      expect(payload.org_id).toBe(org.orgId);
      expect(payload.data.org_id).toBe(org.orgId);
      expect(r.headers['webhook-id']).toBe(payload.id);
      expect(payload.data.requirements).toBeUndefined();
      expect(payload.data.results).toBeUndefined();
      expect(() => verified(theirs.secret, r)).toThrow();
    }
    const byType = (t: string, id: string) => events.find((r) => r.event.type === t && r.event.data.id === id)!.event;
    expect(byType('document.completed', good).data).toEqual(goodDoc);
    expect(byType('document.failed', bad).data).toEqual(badDoc);
    expect(byType('document.deleted', good).data).toEqual(goodDoc);
    // `ready` is the state when its status event was applied before `completed`; a document whose
    // `completed` was applied first (processing → completed) still gets document.ready, then data
    // is the document as it is by then.
    expect(['ready', 'completed']).toContain(byType('document.ready', good).data.status);
    expect(byType('document.ready', good).data).toMatchObject({ id: good, file_name: goodDoc.file_name });
    const { requirements: _r, ...runSummary } = completedRunData;
    expect(byType('check_run.completed', completedRun.id).data).toEqual(runSummary);
    expect(byType('check_run.stopped', stoppedRun.id).data).toMatchObject({ id: stoppedRun.id, status: 'stopped' });
    expect(byType('check_run.failed', failedRun.id).data).toMatchObject({
      id: failedRun.id,
      status: 'failed',
      error_message: expect.stringContaining('unreachable'),
    });
    expect(byType('batch.failed', failedBatch.id).data).toMatchObject({ id: failedBatch.id, status: 'failed' });
    const batchData = (await a.get(`/api/v2/agent/batches/${batch.id}`)).body.data;
    const { results: _res, ...batchSummary } = batchData;
    expect(byType('batch.completed', batch.id).data).toEqual(batchSummary);

    // Per-resource order: the good document's events arrived as ready, completed, deleted.
    expect(types().filter((t) => t.endsWith(good))).toEqual([`document.ready:${good}`, `document.completed:${good}`, `document.deleted:${good}`]);

    // Organizations are kept apart: the other org's endpoint got only its own events, and ours none of theirs.
    await receiver.waitFor(() => receiver.at('/other').some((r) => r.event.type === 'document.deleted'), 60_000, "the other org's event");
    expect(receiver.at('/other').every((r) => verified(theirs.secret, r).org_id === other.orgId)).toBe(true);
    expect(events.some((r) => r.event.data.id === foreign)).toBe(false);

    // A batch that failed as a whole stays failed: its questions queued before the failure are not
    // answered afterwards, and it never sends batch.completed.
    const failedBatchData = (await a.get(`/api/v2/agent/batches/${failedBatch.id}`)).body.data;
    expect(failedBatchData).toMatchObject({ status: 'failed', total_questions: 30, processed_questions: 30 });
    expect(failedBatchData.results.filter((q: any) => q.status === 'pending')).toEqual([]);
    expect(events.some((r) => r.event.type === 'batch.completed' && r.event.data.id === failedBatch.id)).toBe(false);

    // The delivery log: newest first, succeeded with the receiver's status. The receiver has its
    // answer before the worker records it, so wait until nothing is pending.
    const deliveryLog = async () => {
      for (;;) {
        const res = await a.get(`/api/v2/webhooks/${mine.id}/deliveries?limit=200`);
        expect(res.status).toBe(200);
        if (!res.body.data.some((d: any) => d.status === 'pending')) return res;
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    const log = await deliveryLog();
    expect(log.body.pagination.total).toBe(9);
    const rows = log.body.data;
    expect(rows.map((d: any) => `${d.event}:${d.status}:${d.attempts}`).sort()).toEqual(expected.map((e) => `${e.split(':')[0]}:succeeded:1`).sort());
    expect(rows[0]).toEqual({
      id: expect.any(String),
      event: expect.any(String),
      event_id: expect.any(String),
      status: 'succeeded',
      attempts: 1,
      response_status: 200,
      created_at: expect.any(String),
      last_attempt_at: expect.any(String),
      next_attempt_at: null,
      last_error: null,
    });
    const created = rows.map((d: any) => Date.parse(d.created_at));
    expect(created).toEqual([...created].sort((x, y) => y - x));
  });

  it('retries a failing receiver with backoff: 3 failures then a success, the same signed event each time', async () => {
    const org = newOrg('E2E Webhooks flaky');
    const hook = (await create(org.key, { url: receiver.url('/flaky'), events: ['document.deleted'] })).body.data;
    const reserved = (await api(org.key).post('/api/v2/documents').send({ file_name: 'gone.txt', content_type: 'text/plain', size_bytes: 3 })).body.data;
    await api(org.key)
      .delete('/api/v2/documents')
      .send({ document_ids: [reserved.id] });

    await receiver.waitFor((all) => all.filter((r) => r.path === '/flaky' && r.event?.data?.id === reserved.id).length >= 4, 120_000, '4 attempts');
    const attempts = receiver.at('/flaky').filter((r) => r.event.data.id === reserved.id);
    expect(attempts).toHaveLength(4);
    // One event, the same id and body every time; each attempt signed afresh (its own timestamp).
    expect(new Set(attempts.map((r) => r.headers['webhook-id'])).size).toBe(1);
    expect(new Set(attempts.map((r) => r.body)).size).toBe(1);
    for (const r of attempts) expect(verified(hook.secret, r).type).toBe('document.deleted');

    const waitForLog = async () => {
      for (;;) {
        const d = (await api(org.key).get(`/api/v2/webhooks/${hook.id}/deliveries`)).body.data[0];
        if (d.status !== 'pending') return d;
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    const delivery = await waitForLog();
    expect(delivery).toMatchObject({ event: 'document.deleted', status: 'succeeded', attempts: 4, response_status: 200, last_error: null });
    // Nothing more is sent once it succeeded.
    await new Promise((r) => setTimeout(r, 1500));
    expect(receiver.at('/flaky').filter((r) => r.event.data.id === reserved.id)).toHaveLength(4);

    // Manual retry sends it once more.
    const retried = await api(org.key).post(`/api/v2/webhooks/${hook.id}/deliveries/${delivery.id}/retry`);
    expect(retried.status).toBe(200);
    expect(retried.body.data).toMatchObject({ id: delivery.id, status: 'pending' });
    await receiver.waitFor((all) => all.filter((r) => r.path === '/flaky' && r.event?.data?.id === reserved.id).length === 5, 60_000, 'the manual retry');
    expect((await waitForLog()).attempts).toBe(5);
    expect((await api(org.key).post(`/api/v2/webhooks/${hook.id}/deliveries/00000000-0000-4000-8000-000000000000/retry`)).status).toBe(404);
  });

  it('loses nothing when the delivery worker is killed mid-delivery', async () => {
    const org = newOrg('E2E Webhooks crash');
    const hook = (await create(org.key, { url: receiver.url('/hang'), events: ['document.deleted'] })).body.data;
    const reserved = (await api(org.key).post('/api/v2/documents').send({ file_name: 'crash.txt', content_type: 'text/plain', size_bytes: 3 })).body.data;
    const pidFile = path.join(process.env.KB_E2E_DATA_DIR!, 'pids.json');
    const pid = JSON.parse(readFileSync(pidFile, 'utf8')).webhooks as number;
    await api(org.key)
      .delete('/api/v2/documents')
      .send({ document_ids: [reserved.id] });

    // The first attempt is in flight (the receiver holds it): kill the worker now.
    await receiver.waitFor((all) => all.some((r) => r.path === '/hang' && r.event?.data?.id === reserved.id), 60_000, 'the first attempt');
    process.kill(pid, 'SIGKILL');

    // The supervisor restarts it; once the attempt's lease has passed, it is sent again and succeeds.
    await receiver.waitFor(
      (all) => all.filter((r) => r.path === '/hang' && r.event?.data?.id === reserved.id).length >= 2,
      120_000,
      'the attempt after the crash',
    );
    for (;;) {
      const res = await api(org.key).get(`/api/v2/webhooks/${hook.id}/deliveries`);
      const d = res.status === 200 ? res.body.data[0] : null;
      if (d?.status === 'succeeded') {
        expect(d).toMatchObject({ event: 'document.deleted', attempts: 2, response_status: 200 });
        break;
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(JSON.parse(readFileSync(pidFile, 'utf8')).webhooks).not.toBe(pid);
    for (const r of receiver.at('/hang')) expect(verified(hook.secret, r).data.id).toBe(reserved.id);
  });
});

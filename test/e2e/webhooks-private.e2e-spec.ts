import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Webhook } from 'standardwebhooks';
import { DataSource } from 'typeorm';
import { api, ExtraStack, newOrg, startExtraStack } from './support/harness';
import { startReceiver } from './support/webhook-receiver';

jest.setTimeout(600_000);

const openSchema = (url: string, schema: string) =>
  new DataSource({ type: 'postgres', url, extra: { max: 2, options: `-c search_path=${schema}` } }).initialize();

/**
 * Private-address refusal end to end (decisions.md "Webhooks", docs/webhooks.md "Destinations"):
 * the shared e2e stack allows private addresses (its receivers are on 127.0.0.1), so this suite
 * starts a stack of its own with WEBHOOK_ALLOW_PRIVATE=false (the production default) and
 * WEBHOOK_ALLOW_HTTP=true (the receiver speaks plain HTTP). Also: the gateway's idempotency store
 * keeps the answer of POST /api/v2/webhooks sealed, never the secret in clear.
 */
describe('webhooks: private destinations refused, secrets never kept in clear', () => {
  let stack: ExtraStack;
  let dir: string;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let org: { orgId: string; key: string };

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'kb-e2e-webhooks-private-'));
    // BM25 only: this suite embeds nothing.
    stack = await startExtraStack(dir, {
      WEBHOOK_ALLOW_PRIVATE: 'false',
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_RETRY_BASE_MS: '300',
      EMBEDDINGS_PROVIDER: 'none',
    });
    org = newOrg('E2E Webhooks private', { databaseUrl: stack.databaseUrl });
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
    await stack?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('refuses loopback, private, link-local and unique-local destinations at creation and update, in the envelope', async () => {
    for (const url of [
      receiver.url('/hook'), // 127.0.0.1
      'http://localhost:9/hook', // a name resolving to loopback
      'http://10.1.2.3/hook',
      'http://192.168.0.10/hook',
      'http://169.254.169.254/latest/meta-data',
      'http://[::1]/hook',
      'http://[fd00::1]/hook',
      'http://[::ffff:127.0.0.1]/hook',
    ]) {
      const res = await api(org.key, stack.baseUrl)
        .post('/api/v2/webhooks')
        .send({ url, events: ['*'] });
      expect([url, res.status]).toEqual([url, 400]);
      expect(res.body).toMatchObject({ success: false, error: { code: 'VALIDATION_ERROR' } });
      expect(res.body.error.message).toMatch(/url/);
      expect(typeof res.body.request_id).toBe('string');
    }
    // A public address is accepted (nothing is sent to it in this test)…
    const created = await api(org.key, stack.baseUrl)
      .post('/api/v2/webhooks')
      .send({ url: 'http://93.184.215.14/hook', events: ['document.deleted'] });
    expect(created.status).toBe(201);
    // …and cannot be moved to a private one.
    const moved = await api(org.key, stack.baseUrl)
      .patch(`/api/v2/webhooks/${created.body.data.id}`)
      .send({ url: receiver.url('/hook') });
    expect(moved.status).toBe(400);
    expect(moved.body.error.code).toBe('VALIDATION_ERROR');
    await api(org.key, stack.baseUrl).delete(`/api/v2/webhooks/${created.body.data.id}`).expect(204);
  });

  it('refuses, at delivery, a name that now resolves to a private address, and records it in the delivery log', async () => {
    const created = await api(org.key, stack.baseUrl)
      .post('/api/v2/webhooks')
      .send({ url: 'http://93.184.215.14/hook', events: ['document.deleted'] });
    expect(created.status).toBe(201);
    const hook = created.body.data;
    // DNS rebinding, simulated: no DNS server can be controlled here, so the stored URL is changed
    // to a name that resolves to loopback, as a name whose record was changed after the check at
    // creation would. The delivery-time check (the HTTP client's guarded DNS lookup) must refuse it.
    const port = new URL(receiver.url('/')).port;
    const db = await openSchema(stack.databaseUrl, 'webhooks');
    try {
      await db.query(`UPDATE webhook_endpoints SET url = $1 WHERE id = $2`, [`http://localhost:${port}/rebound`, hook.id]);
    } finally {
      await db.destroy();
    }
    const reserved = (await api(org.key, stack.baseUrl).post('/api/v2/documents').send({ file_name: 'gone.txt', content_type: 'text/plain', size_bytes: 3 }))
      .body.data;
    await api(org.key, stack.baseUrl)
      .delete('/api/v2/documents')
      .send({ document_ids: [reserved.id] })
      .expect(200);
    let delivery: any;
    for (const deadline = Date.now() + 120_000; Date.now() < deadline;) {
      const res = await api(org.key, stack.baseUrl).get(`/api/v2/webhooks/${hook.id}/deliveries`);
      delivery = res.body.data?.[0];
      // Claiming counts the attempt before it is made; wait until its outcome is recorded too.
      if (delivery?.attempts >= 1 && (delivery.last_error !== null || delivery.response_status !== null)) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(delivery).toMatchObject({ event: 'document.deleted', response_status: null, last_error: expect.stringMatching(/^refused: /) });
    expect(delivery.last_error).toMatch(/localhost|127\.0\.0\.1|::1/);
    // Nothing reached the receiver, whatever the attempts.
    expect(receiver.at('/rebound')).toEqual([]);
  });

  it('replays POST /api/v2/webhooks with its secret, while the idempotency table holds it sealed', async () => {
    const key = `create-hook-${Date.now()}`;
    const body = { url: 'http://93.184.215.14/idempotent', events: ['batch.completed'] };
    const first = await api(org.key, stack.baseUrl).post('/api/v2/webhooks').set('Idempotency-Key', key).send(body);
    expect(first.status).toBe(201);
    const secret: string = first.body.data.secret;
    expect(secret).toMatch(/^whsec_/);
    const replay = await api(org.key, stack.baseUrl).post('/api/v2/webhooks').set('Idempotency-Key', key).send(body);
    expect(replay.status).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body.data).toEqual(first.body.data);
    // The replayed secret still signs what the service will send.
    const signed = new Webhook(replay.body.data.secret).sign('msg', new Date(), '{}');
    expect(
      new Webhook(secret).verify('{}', { 'webhook-id': 'msg', 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': signed }),
    ).toEqual({});
    // Only one endpoint was created.
    const listed = (await api(org.key, stack.baseUrl).get('/api/v2/webhooks')).body.data.filter((h: any) => h.url === body.url);
    expect(listed).toHaveLength(1);

    const db = await openSchema(stack.databaseUrl, 'gateway');
    try {
      const rows: Array<{ stored: string }> = await db.query(`SELECT response_body::text AS stored FROM idempotency_keys WHERE org_id = $1 AND key = $2`, [
        org.orgId,
        key,
      ]);
      expect(rows).toHaveLength(1);
      expect(rows[0].stored).not.toContain('whsec_');
      expect(rows[0].stored).not.toContain(secret.slice(6, 30));
      expect(JSON.parse(rows[0].stored)).toEqual({ kb_sealed_v1: expect.stringMatching(/^v1\./) });
      // Other routes' answers are kept as they were sent.
      const project = await api(org.key, stack.baseUrl).post('/api/v2/projects').set('Idempotency-Key', `${key}-p`).send({ name: 'kept in clear' });
      expect(project.status).toBe(201);
      const plain: Array<{ stored: any }> = await db.query(`SELECT response_body AS stored FROM idempotency_keys WHERE org_id = $1 AND key = $2`, [
        org.orgId,
        `${key}-p`,
      ]);
      expect(plain[0].stored.data.name).toBe('kept in clear');
    } finally {
      await db.destroy();
    }
  });
});

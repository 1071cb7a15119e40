import { connectNats, publishEvent } from '@kb/common';
import { TokensRecordedEvent, UsageSubjects } from '@kb/events';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { requestFingerprint } from '../../apps/gateway/src/common/idempotency';
import { openGatewayDatabase } from '../../apps/gateway/src/database/database';
import { UsageRepository } from '../../apps/gateway/src/usage/usage.repository';
import { UsageService } from '../../apps/gateway/src/usage/usage.service';
import { api, kbctl, newOrg } from './support/harness';

jest.setTimeout(120_000);

describe('gateway: monthly quotas', () => {
  let db: DataSource;
  beforeAll(async () => {
    db = await openGatewayDatabase(process.env.KB_E2E_DATABASE_URL!);
  });
  afterAll(async () => {
    await db?.destroy();
  });

  // The counters themselves (reset on the 1st, atomic caps, batched uncapped counts) are covered on
  // PostgreSQL by apps/gateway/src/usage/usage.service.medium-spec.ts; here, what the API answers.
  it('answers 402 QUOTA_EXCEEDED over the monthly request cap, with rate-limit headers', async () => {
    const org = newOrg('Cap Org');
    const updated = kbctl('org', 'quota', '--org', org.orgId, '--requests', '3');
    expect(updated.monthly_request_quota).toBe(3);
    const a = api(org.key);
    for (let i = 0; i < 3; i++) expect((await a.get('/api/v2/organization')).status).toBe(200);
    const over = await a.get('/api/v2/organization');
    expect(over.status).toBe(402);
    expect(over.body).toEqual({
      success: false,
      error: { code: 'QUOTA_EXCEEDED', message: expect.stringContaining('request quota of 3') },
      request_id: expect.any(String),
    });
    expect(over.headers['x-ratelimit-limit']).toBe('6000');
    // Raising the cap takes effect at once (kbctl announces the change to every replica).
    kbctl('org', 'quota', '--org', org.orgId, '--requests', 'unlimited');
    expect((await a.get('/api/v2/organization')).status).toBe(200);
  });

  it('counts tokens reported on NATS once per event and refuses requests over the token cap', async () => {
    const org = newOrg('Token Org');
    kbctl('org', 'quota', '--org', org.orgId, '--tokens', '1000');
    const a = api(org.key);
    expect((await a.get('/api/v2/organization')).status).toBe(200);
    const nc = await connectNats(process.env.KB_E2E_NATS_URL!, 'test-usage');
    try {
      const event = (tokens: number): TokensRecordedEvent => ({
        id: randomUUID(),
        orgId: org.orgId,
        source: 'agent.query',
        model: 'embedded-extractive',
        promptTokens: tokens - 10,
        completionTokens: 10,
        totalTokens: tokens,
        at: new Date().toISOString(),
      });
      const first = event(600);
      await publishEvent(nc, UsageSubjects.tokensRecorded, first, first.id);
      // The same event again under a different msgID (a publisher retry after the duplicate window): counted once.
      await publishEvent(nc, UsageSubjects.tokensRecorded, first, randomUUID());
      const second = event(450);
      await publishEvent(nc, UsageSubjects.tokensRecorded, second, second.id);
    } finally {
      await nc.close();
    }
    const usage = new UsageService(new UsageRepository(db));
    const deadline = Date.now() + 15_000;
    while ((await usage.usage(org.orgId)).tokens < 1050 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    await new Promise((r) => setTimeout(r, 500));
    expect((await usage.usage(org.orgId)).tokens).toBe(1050);
    const over = await a.get('/api/v2/projects');
    expect(over.status).toBe(402);
    expect(over.body.error.code).toBe('QUOTA_EXCEEDED');
    expect(over.body.error.message).toContain('token quota of 1000');
  });
});

describe('gateway: idempotency keys', () => {
  const org = newOrg('Idem Org');
  const other = newOrg('Idem Other Org');
  const a = api(org.key);

  it('replays the first response for the same key and body, with Idempotent-Replayed', async () => {
    const key = `create-${randomUUID()}`;
    const first = await a.post('/api/v2/projects').set('Idempotency-Key', key).send({ name: 'Idempotent project', description: 'x' });
    expect(first.status).toBe(201);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const again = await a
      .post('/api/v2/projects')
      .set('Idempotency-Key', key)
      .set('X-Request-Id', 'retry-1')
      .send({ description: 'x', name: 'Idempotent project' });
    expect(again.status).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.data).toEqual(first.body.data);
    expect(again.body.request_id).toBe('retry-1');
    const list = await a.get('/api/v2/projects');
    expect(list.body.data.filter((p: { name: string }) => p.name === 'Idempotent project')).toHaveLength(1);
  });

  it('409 for the same key with a different body; keys are scoped per organization', async () => {
    const key = `scope-${randomUUID()}`;
    expect((await a.post('/api/v2/projects').set('Idempotency-Key', key).send({ name: 'One' })).status).toBe(201);
    const mismatch = await a.post('/api/v2/projects').set('Idempotency-Key', key).send({ name: 'Two' });
    expect(mismatch.status).toBe(409);
    expect(mismatch.body.error).toEqual({ code: 'CONFLICT', message: expect.stringContaining('different request') });
    const otherOrg = await api(other.key).post('/api/v2/projects').set('Idempotency-Key', key).send({ name: 'One' });
    expect(otherOrg.status).toBe(201);
    expect(otherOrg.headers['idempotent-replayed']).toBeUndefined();
  });

  it('409 while the first request with the key is still in flight', async () => {
    const key = `inflight-${randomUUID()}`;
    const db = await openGatewayDatabase(process.env.KB_E2E_DATABASE_URL!);
    try {
      const results = await Promise.all(Array.from({ length: 6 }, () => a.post('/api/v2/projects').set('Idempotency-Key', key).send({ name: 'Race' })));
      const fresh = results.filter((r) => r.status === 201 && !r.headers['idempotent-replayed']);
      expect(fresh).toHaveLength(1);
      for (const r of results) {
        if (r.status === 201) expect(r.body.data.id).toBe(fresh[0].body.data.id);
        else expect(r.body.error.code).toBe('CONFLICT');
      }
      // A first request that is still running (state in_flight) → 409 for the retry.
      const held = `held-${randomUUID()}`;
      await db.query(
        `INSERT INTO idempotency_keys (org_id, key, method, path, request_hash, state, created_at) VALUES ($1, $2, 'POST', '/api/v2/projects', $3, 'in_flight', now())`,
        [org.orgId, held, requestFingerprint('POST', '/api/v2/projects', { name: 'Held' })],
      );
      const busy = await a.post('/api/v2/projects').set('Idempotency-Key', held).send({ name: 'Held' });
      expect(busy.status).toBe(409);
      expect(busy.body.error.message).toContain('still being processed');
    } finally {
      await db.destroy();
    }
  });

  it('replays client errors too, and rejects an over-long key', async () => {
    const key = `invalid-${randomUUID()}`;
    const first = await a.post('/api/v2/projects').set('Idempotency-Key', key).send({ name: '' });
    expect(first.status).toBe(400);
    const again = await a.post('/api/v2/projects').set('Idempotency-Key', key).send({ name: '' });
    expect(again.status).toBe(400);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.error).toEqual(first.body.error);
    const long = await a.post('/api/v2/projects').set('Idempotency-Key', 'k'.repeat(256)).send({ name: 'Long' });
    expect(long.status).toBe(400);
    expect(long.body.error.message).toContain('Idempotency-Key');
  });
});

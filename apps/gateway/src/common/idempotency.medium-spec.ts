import { AppError, createLogger, ErrorCode, SecretBox } from '@kb/common';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import type { FastifyInstance } from 'fastify';
import { DataSource } from 'typeorm';
import { createTestDatabase } from '../../../../test/medium/database';
import { openGatewayDatabase } from '../database/database';
import type { GatewayRequest } from './http-context';
import { Idempotency, IDEMPOTENCY_TTL_HOURS } from './idempotency';
import { IdempotencyKeysRepository } from './idempotency.repository';

// The idempotency store on a real PostgreSQL, driven through Fastify hooks installed the way
// createGateway installs them: replay, conflicts, in-flight keys, release on 5xx, expiry, sealing,
// and per-organization scope. The org comes from an `x-org` header standing in for the API key.

const SERVER_KEY = 'k'.repeat(40);

describe('Idempotency on PostgreSQL', () => {
  let db: DataSource;
  let app: FastifyInstance;
  let runs: number;
  let gate: Promise<void> | null;

  beforeAll(async () => {
    db = await openGatewayDatabase(await createTestDatabase('idempotency'));
    const logger = createLogger('gateway-medium');
    logger.level = 'silent';
    const idempotency = new Idempotency(new IdempotencyKeysRepository(db), logger, new SecretBox(SERVER_KEY));
    app = new FastifyAdapter().getInstance<FastifyInstance>();
    app.addHook('onRequest', (request, _reply, done) => {
      (request as GatewayRequest).kb = { principal: { orgId: String(request.headers['x-org']) } as never };
      done();
    });
    app.addHook('preHandler', (request, reply, done) => {
      idempotency.preHandler(request, reply).then(() => (reply.sent ? undefined : done()), done);
    });
    app.addHook('onSend', (request, reply, payload, done) => {
      if (!idempotency.claimed(request)) return done();
      idempotency.onSend(request, reply, payload).then(() => done(), done);
    });
    app.addHook('onResponse', (request, _reply, done) => {
      if (idempotency.claimed(request)) void idempotency.onResponse(request);
      done();
    });
    app.setErrorHandler((error, request, reply) => {
      const code = error instanceof AppError ? error.code : ErrorCode.INTERNAL_ERROR;
      const status = code === ErrorCode.CONFLICT ? 409 : code === ErrorCode.VALIDATION_ERROR ? 400 : 503;
      void reply.status(status).send({ success: false, error: { code, message: (error as Error).message }, request_id: request.id });
    });
    app.post('/api/v2/things', async (request) => {
      runs++;
      if (gate) await gate;
      return { success: true, data: { run: runs, body: request.body }, request_id: request.id };
    });
    app.post('/api/v2/unavailable', async () => {
      runs++;
      throw new AppError(ErrorCode.SERVICE_UNAVAILABLE, 'down');
    });
    app.post('/api/v2/webhooks', async () => {
      runs++;
      return { success: true, data: { secret: `whsec_${runs}` }, request_id: 'x' };
    });
    await app.ready();
  });
  beforeEach(() => {
    runs = 0;
    gate = null;
  });
  afterAll(async () => {
    await app?.close();
    await db?.destroy();
  });

  const post = (url: string, key: string, body: object, org = 'org-a') =>
    app.inject({ method: 'POST', url, headers: { 'idempotency-key': key, 'x-org': org, 'content-type': 'application/json' }, payload: body });

  it('replays the stored answer of the same request without running it again', async () => {
    const first = await post('/api/v2/things', 'k-replay', { a: 1, b: 2 });
    expect(first.statusCode).toBe(200);
    // Same body with its keys in another order: the same request.
    const second = await post('/api/v2/things', 'k-replay', { b: 2, a: 1 });
    expect(runs).toBe(1);
    expect(second.statusCode).toBe(200);
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(second.json().data).toEqual(first.json().data);
    // Its request_id is the replaying request's own.
    expect(second.json().request_id).not.toBe(first.json().request_id);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
  });

  it('answers 409 for the same key with another body or path', async () => {
    await post('/api/v2/things', 'k-conflict', { a: 1 });
    const otherBody = await post('/api/v2/things', 'k-conflict', { a: 2 });
    expect(otherBody.statusCode).toBe(409);
    expect(otherBody.json().error.message).toMatch(/different request/);
    const otherPath = await post('/api/v2/webhooks', 'k-conflict', { a: 1 });
    expect(otherPath.statusCode).toBe(409);
    expect(runs).toBe(1);
  });

  it('answers 409 while the first request with the key is still running', async () => {
    let open!: () => void;
    gate = new Promise((resolve) => (open = resolve));
    const first = post('/api/v2/things', 'k-inflight', { a: 1 });
    while (runs === 0) await new Promise((r) => setTimeout(r, 5));
    const second = await post('/api/v2/things', 'k-inflight', { a: 1 });
    expect(second.statusCode).toBe(409);
    expect(second.json().error.message).toMatch(/still being processed/);
    open();
    expect((await first).statusCode).toBe(200);
    expect((await post('/api/v2/things', 'k-inflight', { a: 1 })).headers['idempotent-replayed']).toBe('true');
    expect(runs).toBe(1);
  });

  it('releases the key after a server-side failure, so a retry runs again', async () => {
    expect((await post('/api/v2/unavailable', 'k-5xx', {})).statusCode).toBe(503);
    expect((await post('/api/v2/unavailable', 'k-5xx', {})).statusCode).toBe(503);
    expect(runs).toBe(2);
    expect(await db.query(`SELECT 1 FROM idempotency_keys WHERE key = 'k-5xx'`)).toEqual([]);
  });

  it('scopes keys per organization', async () => {
    const a = await post('/api/v2/things', 'k-org', { a: 1 }, 'org-a');
    const b = await post('/api/v2/things', 'k-org', { a: 2 }, 'org-b');
    expect([a.statusCode, b.statusCode]).toEqual([200, 200]);
    expect(b.headers['idempotent-replayed']).toBeUndefined();
    expect(runs).toBe(2);
  });

  it('forgets a key after 24 h, takes over one abandoned in flight for 10 min, and purges old records', async () => {
    await post('/api/v2/things', 'k-old', { a: 1 });
    await db.query(`UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE key = 'k-old'`);
    const again = await post('/api/v2/things', 'k-old', { other: true });
    expect(again.statusCode).toBe(200);
    expect(again.headers['idempotent-replayed']).toBeUndefined();
    expect(runs).toBe(2);

    await db.query(
      `INSERT INTO idempotency_keys (org_id, key, method, path, request_hash, state, created_at) VALUES ('org-a', 'k-abandoned', 'POST', '/api/v2/things', 'x', 'in_flight', now() - interval '11 minutes')`,
    );
    expect((await post('/api/v2/things', 'k-abandoned', { a: 1 })).statusCode).toBe(200);
    expect(runs).toBe(3);

    await db.query(`UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE key = 'k-abandoned'`);
    await new IdempotencyKeysRepository(db).purgeOlderThan(IDEMPOTENCY_TTL_HOURS);
    expect((await db.query(`SELECT key FROM idempotency_keys WHERE key IN ('k-old', 'k-abandoned')`)).map((r: { key: string }) => r.key)).toEqual(['k-old']);
  });

  it('keeps the answer of a sealed route sealed at rest and replays it in clear', async () => {
    const first = await post('/api/v2/webhooks', 'k-sealed', { url: 'https://example.org' });
    const secret = first.json().data.secret;
    const [row] = await db.query(`SELECT response_body::text AS body FROM idempotency_keys WHERE key = 'k-sealed'`);
    expect(row.body).not.toContain(secret);
    const replay = await post('/api/v2/webhooks', 'k-sealed', { url: 'https://example.org' });
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json().data.secret).toBe(secret);
    expect(runs).toBe(1);
  });

  it('refuses a malformed key before storing anything', async () => {
    const bad = await post('/api/v2/things', 'ключ', { a: 1 });
    expect(bad.statusCode).toBe(400);
    expect(runs).toBe(0);
  });
});

import { connectNats, createLogger, NatsConnection } from '@kb/common';
import { DataSource } from 'typeorm';
import { createTestDatabase } from '../../../../test/medium/database';
import { startNatsServer } from '../../../../test/support/nats-server';
import { openGatewayDatabase } from '../database/database';
import { RateLimiter, RateLimiterOptions, WINDOW_SECONDS } from './rate-limit';
import { RateLimitWindowsRepository } from './rate-limit.repository';

jest.setTimeout(60_000);

// Rate-limit leases on a real PostgreSQL (the shared table `gateway.rate_limit_windows`) and a real
// nats-server (the reclaim protocol): replicas are RateLimiter instances sharing both, as gateway
// replicas do. The clock is injected so that windows are crossed without waiting.

describe('RateLimiter on PostgreSQL', () => {
  let db: DataSource;
  let nats: { url: string; stop: () => Promise<void> };
  const connections: NatsConnection[] = [];
  const limiters: RateLimiter[] = [];
  const logger = createLogger('gateway-medium');
  logger.level = 'silent';
  /** Start of a window well inside it; each test uses its own minute. */
  let minute = Math.floor(Date.now() / 60_000) * 60_000 + 1_000;
  const clock = { now: minute };

  beforeAll(async () => {
    db = await openGatewayDatabase(await createTestDatabase('ratelimit'));
    nats = await startNatsServer();
  });
  beforeEach(() => {
    minute += 10 * 60_000;
    clock.now = minute;
  });
  afterAll(async () => {
    for (const l of limiters) l.stop();
    for (const c of connections) await c.close();
    await nats?.stop();
    await db?.destroy();
  });

  /** A gateway replica's limiter; `withNats` false = one that cannot be reached over NATS. */
  async function replica(options: RateLimiterOptions = {}, withNats = true): Promise<RateLimiter> {
    let nc: NatsConnection | undefined;
    if (withNats) {
      nc = await connectNats(nats.url, 'gateway-medium');
      connections.push(nc);
    }
    const limiter = new RateLimiter(new RateLimitWindowsRepository(db), nc, logger, { now: () => clock.now, ...options });
    if (withNats) limiter.start();
    limiters.push(limiter);
    return limiter;
  }
  const allowedOf = (states: { allowed: boolean }[]) => states.filter((s) => s.allowed).length;

  it('admits exactly the limit in a window, counts down Remaining, and admits again in the next window', async () => {
    const limiter = await replica();
    const states = [];
    for (let i = 0; i < 6; i++) states.push(await limiter.consume('key-a', 5));
    expect(states.map((s) => [s.allowed, s.remaining])).toEqual([
      [true, 4],
      [true, 3],
      [true, 2],
      [true, 1],
      [true, 0],
      [false, 0],
    ]);
    const windowEnd = (Math.floor(clock.now / 60_000) + 1) * WINDOW_SECONDS;
    expect(states.every((s) => s.limit === 5 && s.reset === windowEnd)).toBe(true);
    // Another key has its own budget.
    expect((await limiter.consume('key-b', 5)).allowed).toBe(true);
    clock.now += 60_000;
    const next = await limiter.consume('key-a', 5);
    expect([next.allowed, next.remaining, next.reset]).toEqual([true, 4, windowEnd + WINDOW_SECONDS]);
  });

  it('never admits more than the limit across replicas leasing blocks, and gives leased tokens back where requests arrive', async () => {
    const a = await replica();
    const b = await replica();
    // 100/min: each grant leases 5 tokens. Replica a takes most, then b asks for the rest.
    const fromA = await Promise.all(Array.from({ length: 90 }, () => a.consume('key-shared', 100)));
    const fromB = await Promise.all(Array.from({ length: 60 }, () => b.consume('key-shared', 100)));
    expect(allowedOf(fromA)).toBe(90);
    // Exact: b gets the 10 left, including what a had leased and not used (reclaimed over NATS).
    expect(allowedOf(fromB)).toBe(10);
    expect((await a.consume('key-shared', 100)).allowed).toBe(false);
    const [row] = await db.query(`SELECT granted, contended FROM rate_limit_windows WHERE key_id = 'key-shared'`);
    expect(row).toEqual({ granted: 100, contended: true });
  });

  it('leaves the tokens of a replica that died unused until the window ends: fewer than the limit, never more', async () => {
    const dead = await replica({}, false);
    const alive = await replica({ reclaimTimeoutMs: 200 });
    // The dead replica leased 5 tokens (100/min), used 1, and will never answer a reclaim.
    expect((await dead.consume('key-dead', 100)).allowed).toBe(true);
    const states = [];
    for (let i = 0; i < 100; i++) states.push(await alive.consume('key-dead', 100));
    expect(allowedOf(states)).toBe(95);
    expect(states.at(-1)!.allowed).toBe(false);
    // The next window starts from a full budget.
    clock.now += 60_000;
    expect((await alive.consume('key-dead', 100)).remaining).toBeGreaterThan(90);
  });
});

import { ChildProcess } from 'node:child_process';
import request from 'supertest';
import { api, baseUrl, kbctl, newOrg, spawnGateway, suiteGrpcUrls, suiteStack } from './support/harness';

jest.setTimeout(120_000);

/**
 * Starts a second gateway process against the suite's PostgreSQL, NATS and services (what a second
 * replica behind a load balancer is). Returns its base URL and the child process.
 */
async function startSecondGateway(): Promise<{ url: string; child: ChildProcess }> {
  const stack = suiteStack();
  const { child, url } = await spawnGateway(
    { ...suiteGrpcUrls(stack), PUBLIC_BASE_URL: `http://localhost:${stack.ports.gateway}`, OTEL_SDK_DISABLED: 'true', LOG_LEVEL: 'warn' },
    ['ignore', 'ignore', 'pipe'],
  );
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`second gateway exited with ${child.exitCode}`);
    const ok = await fetch(`${url}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return { url, child };
    await new Promise((r) => setTimeout(r, 200));
  }
  child.kill('SIGKILL');
  throw new Error('second gateway did not start');
}

/** Waits until at least `marginS` seconds remain in the current one-minute window. */
async function awayFromWindowEdge(marginS = 8): Promise<void> {
  const left = 60 - (Math.floor(Date.now() / 1000) % 60);
  if (left < marginS) await new Promise((r) => setTimeout(r, left * 1000 + 200));
}

const RATE_HEADERS = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'];

describe('gateway: rate limits, key revocation, replicas', () => {
  let second: { url: string; child: ChildProcess };

  beforeAll(async () => {
    second = await startSecondGateway();
  });
  afterAll(async () => {
    if (second?.child.exitCode === null) {
      const exited = new Promise((r) => second.child.once('exit', r));
      second.child.kill('SIGTERM');
      await exited;
    }
  });

  it('puts X-RateLimit-* on every authenticated response, errors included', async () => {
    const org = newOrg('Headers Org');
    const key = kbctl('key', 'create', '--org', org.orgId, '--rate-limit', '50');
    const a = api(key.key);
    await awayFromWindowEdge();
    const responses = [
      await a.get('/api/v2/organization'),
      await a.get('/api/v2/no-such-route'),
      await a.get('/api/v2/projects/not-a-uuid'),
      await a.post('/api/v2/projects').set('Content-Type', 'application/json').send('{"name": '),
      await a.post('/api/v2/projects').send({ name: '' }),
    ];
    expect(responses.map((r) => r.status)).toEqual([200, 404, 400, 400, 400]);
    const windowEnd = Math.floor(Date.now() / 60000) * 60 + 60;
    responses.forEach((r, i) => {
      for (const h of RATE_HEADERS) expect(r.headers[h]).toBeDefined();
      expect(r.headers['x-ratelimit-limit']).toBe('50');
      expect(Number(r.headers['x-ratelimit-remaining'])).toBe(50 - (i + 1));
      expect(Number(r.headers['x-ratelimit-reset'])).toBe(windowEnd);
      expect(r.headers['x-request-id']).toBe(r.body.request_id);
    });
    // A key created without --rate-limit gets the default of 100 per minute.
    const plain = kbctl('key', 'create', '--org', org.orgId);
    expect(plain.rate_limit_per_minute).toBe(100);
    expect((await api(plain.key).get('/api/v2/organization')).headers['x-ratelimit-limit']).toBe('100');
    // An unauthenticated request has no key, hence no rate-limit headers.
    const anonymous = await request(baseUrl()).get('/api/v2/organization');
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers['x-ratelimit-limit']).toBeUndefined();
  });

  it('admits exactly the limit under concurrency: 40 parallel requests, limit 20 → 20 pass', async () => {
    const org = newOrg('Burst Org');
    const key = kbctl('key', 'create', '--org', org.orgId, '--rate-limit', '20');
    await awayFromWindowEdge();
    const results = await Promise.all(Array.from({ length: 40 }, () => api(key.key).get('/api/v2/organization')));
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(20);
    expect(statuses.filter((s) => s === 429)).toHaveLength(20);
    const limited = results.find((r) => r.status === 429)!;
    expect(limited.body.error.code).toBe('RATE_LIMITED');
    const retryAfter = Number(limited.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(limited.body.error.message).toContain(`${retryAfter} seconds`);
    expect(limited.headers['x-ratelimit-remaining']).toBe('0');
    expect(limited.headers['x-ratelimit-limit']).toBe('20');
  });

  it('shares one window across two gateway processes', async () => {
    const org = newOrg('Replica Org');
    const key = kbctl('key', 'create', '--org', org.orgId, '--rate-limit', '10');
    await awayFromWindowEdge();
    const results = await Promise.all(Array.from({ length: 16 }, (_, i) => api(key.key, i % 2 === 0 ? baseUrl() : second.url).get('/api/v2/organization')));
    const ok = results.filter((r) => r.status === 200);
    expect(ok).toHaveLength(10);
    expect(results.filter((r) => r.status === 429)).toHaveLength(6);
    // Both replicas admitted some and refused some of the same budget.
    const perReplica = (even: boolean) => results.filter((_, i) => (i % 2 === 0) === even).map((r) => r.status);
    expect(perReplica(true)).toContain(200);
    expect(perReplica(false)).toContain(200);
  });

  /** Sends `n` GETs of /api/v2/organization, `parallel` at a time, to the replica `urlOf(i)`; returns the statuses. */
  async function burst(key: string, n: number, parallel: number, urlOf: (i: number) => string): Promise<number[]> {
    const statuses: number[] = [];
    for (let start = 0; start < n; start += parallel) {
      const batch = Array.from({ length: Math.min(parallel, n - start) }, (_, j) => api(key, urlOf(start + j)).get('/api/v2/organization'));
      statuses.push(...(await Promise.all(batch)).map((r) => r.status));
    }
    return statuses;
  }

  it('leases tokens in blocks to each replica and takes back what an idle replica holds: still exactly the limit', async () => {
    // A limit of 1000/min is served from leases of 50 tokens (1/20 of the limit).
    const org = newOrg('Lease Org');
    const key = kbctl('key', 'create', '--org', org.orgId, '--rate-limit', '1000').key;
    await awayFromWindowEdge(20);
    // The first replica leases a block and uses one token of it.
    const first = await api(key).get('/api/v2/organization');
    expect(first.status).toBe(200);
    expect(first.headers['x-ratelimit-remaining']).toBe('999');
    // The second replica then takes everything else: its last 49 tokens come back from the
    // first replica's unused lease (reclaimed over NATS).
    const statuses = await burst(key, 1100, 20, () => second.url);
    expect(statuses.filter((s) => s === 200)).toHaveLength(999);
    expect(statuses.filter((s) => s === 429)).toHaveLength(101);
    // Nothing is left for the first replica either.
    const after = await api(key).get('/api/v2/organization');
    expect(after.status).toBe(429);
    expect(after.headers['x-ratelimit-remaining']).toBe('0');
  });

  it('admits exactly the limit when both replicas serve one key at once from leases', async () => {
    const org = newOrg('Lease Race Org');
    const key = kbctl('key', 'create', '--org', org.orgId, '--rate-limit', '600').key;
    await awayFromWindowEdge(20);
    const statuses = await burst(key, 800, 24, (i) => (i % 2 === 0 ? baseUrl() : second.url));
    expect(statuses.filter((s) => s === 200)).toHaveLength(600);
    expect(statuses.filter((s) => s === 429)).toHaveLength(200);
  });

  it('refuses a revoked key on the second replica within 1 s (cache invalidated over NATS)', async () => {
    const org = newOrg('Revoke Org');
    const key = kbctl('key', 'create', '--org', org.orgId, '--name', 'to revoke');
    // Warm both replicas' key caches (a lookup is cached for GATEWAY_KEY_CACHE_TTL_MS = 60 s).
    expect((await api(key.key, second.url).get('/api/v2/organization')).status).toBe(200);
    expect((await api(key.key).get('/api/v2/organization')).status).toBe(200);
    kbctl('key', 'revoke', key.id);
    const revokedAt = Date.now();
    let status = 0;
    while (Date.now() - revokedAt < 1000) {
      status = (await api(key.key, second.url).get('/api/v2/organization')).status;
      if (status === 401) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(status).toBe(401);
    expect((await api(key.key).get('/api/v2/organization')).status).toBe(401);
    // Another key of the same organization keeps working.
    expect((await api(org.key, second.url).get('/api/v2/organization')).status).toBe(200);
  });
});

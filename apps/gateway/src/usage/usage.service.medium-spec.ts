import { ErrorCode } from '@kb/common';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { createTestDatabase } from '../../../../test/medium/database';
import { openGatewayDatabase } from '../database/database';
import { UsageRepository } from './usage.repository';
import { UsageService } from './usage.service';

// Monthly quotas on a real PostgreSQL (`gateway.usage_monthly`, `gateway.usage_events`): request
// and token caps, concurrent requests, the reset on the 1st, token events counted once, org scope.

describe('UsageService on PostgreSQL', () => {
  let db: DataSource;
  const clock = { now: new Date('2026-03-31T23:59:00Z') };
  let usage: UsageService;

  beforeAll(async () => {
    db = await openGatewayDatabase(await createTestDatabase('usage'));
    usage = new UsageService(new UsageRepository(db), () => clock.now, 60_000);
  });
  afterAll(async () => {
    await usage?.flush();
    await db?.destroy();
  });

  const principal = (orgId: string, monthlyRequestQuota: number | null, monthlyTokenQuota: number | null) => ({
    orgId,
    monthlyRequestQuota,
    monthlyTokenQuota,
  });

  it('admits exactly the request cap under concurrent requests, refuses the rest without counting them, and resets on the 1st', async () => {
    clock.now = new Date('2026-03-31T23:59:00Z');
    const capped = principal('org-usage-cap', 5, null);
    const results = await Promise.allSettled(Array.from({ length: 8 }, () => usage.admitRequest(capped)));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(5);
    const refused = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(refused.reason).toMatchObject({ code: ErrorCode.QUOTA_EXCEEDED });
    expect(refused.reason.message).toContain('Monthly request quota of 5 requests exceeded; it resets at 2026-04-01T00:00:00.000Z');
    expect(await usage.usage('org-usage-cap')).toEqual({ month: '2026-03-01', requests: 5, tokens: 0 });
    // Another organization has its own counter.
    await usage.admitRequest(principal('org-usage-other', 5, null));
    expect((await usage.usage('org-usage-other')).requests).toBe(1);
    clock.now = new Date('2026-04-01T00:00:01Z');
    await usage.admitRequest(capped);
    expect(await usage.usage('org-usage-cap')).toEqual({ month: '2026-04-01', requests: 1, tokens: 0 });
  });

  it('counts recorded tokens once per event and refuses requests once the token cap is used', async () => {
    clock.now = new Date('2026-05-10T12:00:00Z');
    const org = 'org-usage-tokens';
    const event = { id: randomUUID(), orgId: org, totalTokens: 700, at: '2026-05-10T11:00:00Z' } as Parameters<UsageService['recordTokens']>[0];
    expect(await usage.recordTokens(event)).toBe(true);
    expect(await usage.recordTokens(event)).toBe(false); // redelivered
    expect(await usage.recordTokens({ ...event, id: randomUUID(), totalTokens: 300 })).toBe(true);
    expect(await usage.usage(org)).toEqual({ month: '2026-05-01', requests: 0, tokens: 1000 });
    await expect(usage.admitRequest(principal(org, null, 1000))).rejects.toMatchObject({ code: ErrorCode.QUOTA_EXCEEDED });
    await usage.admitRequest(principal(org, null, 1001));
    expect((await usage.usage(org)).requests).toBe(1);
  });

  it('counts requests of uncapped organizations in memory and writes them on flush, so a cap set mid-month applies to the whole month', async () => {
    clock.now = new Date('2026-06-02T08:00:00Z');
    const free = principal('org-usage-free', null, null);
    await Promise.all(Array.from({ length: 3 }, () => usage.admitRequest(free)));
    expect((await usage.usage('org-usage-free')).requests).toBe(0);
    await usage.flush();
    expect((await usage.usage('org-usage-free')).requests).toBe(3);
    await expect(usage.admitRequest({ ...free, monthlyRequestQuota: 3 })).rejects.toMatchObject({ code: ErrorCode.QUOTA_EXCEEDED });
  });

  it('forgets de-duplication records after 8 days', async () => {
    const old = { id: randomUUID(), orgId: 'org-usage-purge', totalTokens: 1, at: new Date(Date.now() - 9 * 86_400_000).toISOString() } as Parameters<
      UsageService['recordTokens']
    >[0];
    const recent = { ...old, id: randomUUID(), at: new Date().toISOString() };
    await usage.recordTokens(old);
    await usage.recordTokens(recent);
    await usage.purgeOldEvents();
    const ids = (await db.query(`SELECT id FROM usage_events WHERE org_id = 'org-usage-purge'`)).map((r: { id: string }) => r.id);
    expect(ids).toEqual([recent.id]);
  });
});

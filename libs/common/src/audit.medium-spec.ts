import { DataSource } from 'typeorm';
import { createTestDatabase } from '../../../test/medium/database';
import { AuditEvents1764700000000, listAuditEvents, recordAuditEvent } from './audit';
import { openDatabase } from './db';

// The audit log's helper and query on a real PostgreSQL (decisions.md "Audit log"): written in the
// caller's transaction (a rollback leaves nothing), append-only, newest first, filters, pagination
// with a total, another organization's events invisible; the shared migration runs from two schemas.

const ORG = 'org-audit-a';
const OTHER = 'org-audit-b';
const origin = { requestId: 'req-1', actor: { apiKeyId: '5f1c2d3e-4a5b-4c6d-8e7f-9a0b1c2d3e4f', apiKeyName: 'ci' } };

describe('audit events on PostgreSQL', () => {
  let db: DataSource;
  let second: DataSource;

  beforeAll(async () => {
    const url = await createTestDatabase('audit');
    // Two services' schemas list the same migration: the shared table is created once, both succeed.
    [db, second] = await Promise.all([
      openDatabase({ url, schema: 'svc_one', entities: [], migrations: [AuditEvents1764700000000] }),
      openDatabase({ url, schema: 'svc_two', entities: [], migrations: [AuditEvents1764700000000] }),
    ]);
    const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
    await recordAuditEvent(db, {
      orgId: ORG,
      action: 'project.created',
      resourceType: 'project',
      resourceId: 'p1',
      origin,
      at: at(1),
      data: { after: { name: 'A' } },
    });
    await recordAuditEvent(second, {
      orgId: ORG,
      action: 'project.updated',
      resourceType: 'project',
      resourceId: 'p1',
      origin,
      at: at(2),
      data: { before: { name: 'A' }, after: { name: 'B' } },
    });
    await recordAuditEvent(db, {
      orgId: ORG,
      action: 'requirement.reviewed',
      resourceType: 'requirement',
      resourceId: 'r1',
      origin,
      reviewer: 'Dana',
      at: at(3),
      data: { before: null, after: { decision: 'fail' } },
    });
    await recordAuditEvent(db, {
      orgId: ORG,
      action: 'project.deleted',
      resourceType: 'project',
      resourceId: 'p1',
      origin,
      at: at(4),
      data: { before: { name: 'B' } },
    });
    await recordAuditEvent(db, { orgId: OTHER, action: 'project.created', resourceType: 'project', resourceId: 'p9', origin, at: at(5), data: {} });
  });
  afterAll(async () => {
    await db?.destroy();
    await second?.destroy();
  });

  it('lists the organization events newest first, with the actor, request id and data as written', async () => {
    const { rows, total } = await listAuditEvents(db, ORG, { limit: 50, offset: 0 });
    expect(total).toBe(4);
    expect(rows.map((r) => r.action)).toEqual(['project.deleted', 'requirement.reviewed', 'project.updated', 'project.created']);
    expect(rows[1]).toMatchObject({
      org_id: ORG,
      resource_type: 'requirement',
      resource_id: 'r1',
      actor: { api_key_id: origin.actor.apiKeyId, api_key_name: 'ci', reviewer: 'Dana' },
      data: { before: null, after: { decision: 'fail' } },
      request_id: 'req-1',
    });
    expect(rows[2].actor).toEqual({ api_key_id: origin.actor.apiKeyId, api_key_name: 'ci' });
    expect(rows[2].data).toEqual({ before: { name: 'A' }, after: { name: 'B' } });
  });

  it('filters by resource, action and time window, and pages with a total', async () => {
    expect((await listAuditEvents(db, ORG, { resourceType: 'project', resourceId: 'p1', limit: 50, offset: 0 })).total).toBe(3);
    expect((await listAuditEvents(db, ORG, { action: 'requirement.reviewed', limit: 50, offset: 0 })).rows.map((r) => r.resource_id)).toEqual(['r1']);
    const window = await listAuditEvents(db, ORG, {
      since: new Date(Date.UTC(2026, 0, 1, 0, 0, 2)),
      until: new Date(Date.UTC(2026, 0, 1, 0, 0, 4)),
      limit: 50,
      offset: 0,
    });
    expect(window.rows.map((r) => r.action)).toEqual(['requirement.reviewed', 'project.updated']);
    const page = await listAuditEvents(db, ORG, { limit: 2, offset: 1 });
    expect(page).toMatchObject({ total: 4 });
    expect(page.rows.map((r) => r.action)).toEqual(['requirement.reviewed', 'project.updated']);
  });

  it("never shows another organization's events", async () => {
    const { rows, total } = await listAuditEvents(db, OTHER, { limit: 50, offset: 0 });
    expect(total).toBe(1);
    expect(rows.map((r) => r.resource_id)).toEqual(['p9']);
    expect((await listAuditEvents(db, 'org-nobody', { resourceId: 'p1', limit: 50, offset: 0 })).total).toBe(0);
  });

  it('is written in the caller transaction: a rolled-back change leaves no event', async () => {
    await expect(
      db.transaction(async (m) => {
        await recordAuditEvent(m, { orgId: ORG, action: 'project.created', resourceType: 'project', resourceId: 'rolled-back', origin, data: {} });
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    expect((await listAuditEvents(db, ORG, { resourceId: 'rolled-back', limit: 50, offset: 0 })).total).toBe(0);
  });

  it('refuses UPDATE, DELETE and TRUNCATE of events (append-only)', async () => {
    await expect(db.query(`UPDATE audit.audit_events SET action = 'x'`)).rejects.toThrow(/append-only/);
    await expect(db.query(`DELETE FROM audit.audit_events`)).rejects.toThrow(/append-only/);
    await expect(db.query(`TRUNCATE audit.audit_events`)).rejects.toThrow(/append-only/);
    expect((await listAuditEvents(db, ORG, { limit: 50, offset: 0 })).total).toBe(4);
  });
});

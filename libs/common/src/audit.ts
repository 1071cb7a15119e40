import { randomUUID } from 'node:crypto';
import type { DataSource, EntityManager } from 'typeorm';
import type { CallContext } from './grpc';
import { sqlMigration } from './migrations';

/**
 * The audit log (decisions.md "Audit log", docs/audit.md). Every service shares one PostgreSQL
 * database (one `DATABASE_URL`, a schema per service), so the log is ONE append-only table,
 * `audit.audit_events`, that each service writes with {@link recordAuditEvent} inside the
 * transaction of the change it records (the event exists if and only if the change committed),
 * and that the gateway reads with {@link listAuditEvents} (one query: newest first, filters and a
 * total). UPDATE, DELETE and TRUNCATE are refused by triggers: the product never changes or removes
 * an event; an operator archives by SQL (docs/audit.md "Retention").
 */

/** Who made a change: the API key of the request (null for operator CLI changes), and the reviewer of a review. */
export interface AuditActor {
  api_key_id: string | null;
  api_key_name: string | null;
  /** The person named by a review (`requirement.reviewed` / `requirement.review_removed`); absent otherwise. */
  reviewer?: string | null;
}

/** Where a change comes from: the request id and the caller's API key ({@link CallContext} fits). */
export type AuditOrigin = Pick<CallContext, 'requestId' | 'actor'>;

/** An event as the service recording it knows it. */
export interface AuditEventInput {
  orgId: string;
  /** `<resource>.<past-tense verb>`, e.g. `project.created` (the list: docs/audit.md). */
  action: string;
  /** e.g. `project`, `document`, `check_run`, `requirement`, `batch`, `webhook_endpoint`, `api_key`. */
  resourceType: string;
  resourceId: string;
  /** What changed (`before`/`after` for updates and reviews); JSON. */
  data: Record<string, unknown>;
  /** Request id and API key of the call; absent for changes without a caller (tests). */
  origin?: AuditOrigin | null;
  /** The reviewer, for review events. */
  reviewer?: string | null;
  /** Operator CLI changes: the actor (`{ api_key_id: null, api_key_name: null, operator: 'kbctl' }`) overrides origin's. */
  actor?: Record<string, unknown>;
  /** Time of the change (default now). */
  at?: Date;
}

/** An event as stored and served (`GET /api/v2/audit-events`). */
export interface AuditEventRow {
  id: string;
  org_id: string;
  action: string;
  resource_type: string;
  resource_id: string;
  actor: AuditActor & Record<string, unknown>;
  data: Record<string, unknown>;
  request_id: string | null;
  created_at: Date;
}

/** Serialises the creation of the shared schema when several services migrate at once. */
const AUDIT_DDL_LOCK = `SELECT pg_advisory_xact_lock(hashtext('kb-audit-events-ddl'))`;

/** DDL of `audit.audit_events` (idempotent: each service's migration runs it in its own schema's history). */
export const AUDIT_EVENTS_DDL = [
  AUDIT_DDL_LOCK,
  `CREATE SCHEMA IF NOT EXISTS audit`,
  `CREATE TABLE IF NOT EXISTS audit.audit_events (
     seq bigserial NOT NULL,
     id uuid PRIMARY KEY,
     org_id text NOT NULL,
     action text NOT NULL,
     resource_type text NOT NULL,
     resource_id text NOT NULL,
     actor jsonb NOT NULL,
     data jsonb NOT NULL,
     request_id text,
     created_at timestamptz NOT NULL
   )`,
  `CREATE INDEX IF NOT EXISTS audit_events_org_time ON audit.audit_events (org_id, created_at DESC, seq DESC)`,
  `CREATE INDEX IF NOT EXISTS audit_events_org_resource ON audit.audit_events (org_id, resource_type, resource_id)`,
  `CREATE OR REPLACE FUNCTION audit.refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     RAISE EXCEPTION 'audit.audit_events is append-only (% refused); see docs/audit.md "Retention"', TG_OP;
   END $$`,
  `DO $$ BEGIN
     IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = 'audit_events_append_only' AND tgrelid = 'audit.audit_events'::regclass) THEN
       CREATE TRIGGER audit_events_append_only BEFORE UPDATE OR DELETE ON audit.audit_events FOR EACH ROW EXECUTE FUNCTION audit.refuse_change();
       CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON audit.audit_events FOR EACH STATEMENT EXECUTE FUNCTION audit.refuse_change();
     END IF;
   END $$`,
];

/**
 * The migration creating `audit.audit_events`, listed under this one name by every service that
 * records events (documents, check, agent, webhooks, gateway for kbctl). Its `down` removes
 * nothing: the table is shared and its events are kept.
 */
export const AuditEvents1764700000000 = sqlMigration('AuditEvents1764700000000', { up: AUDIT_EVENTS_DDL, down: [] });

/**
 * Inserts one audit event within the caller's transaction (`m` must be the transaction's
 * EntityManager for the "same transaction" guarantee).
 * @returns the event id (UUID).
 */
export async function recordAuditEvent(m: EntityManager | DataSource, event: AuditEventInput): Promise<string> {
  const id = randomUUID();
  const actor = event.actor ?? {
    api_key_id: event.origin?.actor?.apiKeyId ?? null,
    api_key_name: event.origin?.actor?.apiKeyName ?? null,
    ...(event.reviewer !== undefined ? { reviewer: event.reviewer } : {}),
  };
  await m.query(
    `INSERT INTO audit.audit_events (id, org_id, action, resource_type, resource_id, actor, data, request_id, created_at)
     VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7::jsonb, $8, $9)`,
    [
      id,
      event.orgId,
      event.action,
      event.resourceType,
      event.resourceId,
      JSON.stringify(actor),
      JSON.stringify(event.data),
      event.origin?.requestId ?? null,
      event.at ?? new Date(),
    ],
  );
  return id;
}

/** Filters of {@link listAuditEvents} (already validated by the caller). */
export interface AuditEventFilter {
  resourceType?: string | null;
  resourceId?: string | null;
  action?: string | null;
  /** Inclusive lower bound of `created_at`. */
  since?: Date | null;
  /** Exclusive upper bound of `created_at`. */
  until?: Date | null;
  limit: number;
  offset: number;
}

/**
 * The organization's audit events matching `filter`, newest first (`created_at`, then insertion
 * order), with the total count of matches.
 */
export async function listAuditEvents(
  db: DataSource | EntityManager,
  orgId: string,
  filter: AuditEventFilter,
): Promise<{ rows: AuditEventRow[]; total: number }> {
  const where = `org_id = $1 AND ($2::text IS NULL OR resource_type = $2) AND ($3::text IS NULL OR resource_id = $3)
    AND ($4::text IS NULL OR action = $4) AND ($5::timestamptz IS NULL OR created_at >= $5) AND ($6::timestamptz IS NULL OR created_at < $6)`;
  const params = [orgId, filter.resourceType ?? null, filter.resourceId ?? null, filter.action ?? null, filter.since ?? null, filter.until ?? null];
  const rows: AuditEventRow[] = await db.query(
    `SELECT id, org_id, action, resource_type, resource_id, actor, data, request_id, created_at FROM audit.audit_events
     WHERE ${where} ORDER BY created_at DESC, seq DESC LIMIT $7 OFFSET $8`,
    [...params, filter.limit, filter.offset],
  );
  const [{ total }] = await db.query<{ total: number }[]>(`SELECT count(*)::int AS total FROM audit.audit_events WHERE ${where}`, params);
  return { rows, total };
}

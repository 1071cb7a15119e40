import { AuditOrigin, recordAuditEvent, rowsOf } from '@kb/common';
import type { DeliveryStatus } from '@kb/events';
import { DataSource } from 'typeorm';

/** A row of `webhook_endpoints`. */
export interface EndpointRow {
  id: string;
  org_id: string;
  url: string;
  events: string[];
  description: string | null;
  enabled: boolean;
  secret_ciphertext: string;
  created_at: Date;
  updated_at: Date;
}

/** An endpoint as the audit log records it: never its secret. */
function auditEndpoint(row: EndpointRow): Record<string, unknown> {
  return { url: row.url, events: row.events, description: row.description, enabled: row.enabled };
}

/** A row of `webhook_deliveries` (`seq` as text: bigint). */
export interface DeliveryRow {
  id: string;
  seq: string;
  endpoint_id: string;
  org_id: string;
  event_id: string;
  event_type: string;
  resource_key: string;
  payload: Record<string, unknown>;
  status: DeliveryStatus;
  attempts: number;
  response_status: number | null;
  last_error: string | null;
  created_at: Date;
  last_attempt_at: Date | null;
  next_attempt_at: Date;
  give_up_at: Date;
  lease_until: Date | null;
}

/** A claimed delivery with what is needed to send it. */
export interface ClaimedDelivery extends DeliveryRow {
  url: string;
  secret_ciphertext: string;
}

const ENDPOINT_COLUMNS = `id, org_id, url, events::text[] AS events, description, enabled, secret_ciphertext, created_at, updated_at`;
const DELIVERY_COLUMNS = `id, seq::text AS seq, endpoint_id, org_id, event_id, event_type, resource_key, payload, status, attempts, response_status,
  last_error, created_at, last_attempt_at, next_attempt_at, give_up_at, lease_until`;

const CLAIMED_COLUMNS = `d.id, d.seq::text AS seq, d.endpoint_id, d.org_id, d.event_id, d.event_type, d.resource_key, d.payload, d.status, d.attempts,
  d.response_status, d.last_error, d.created_at, d.last_attempt_at, d.next_attempt_at, d.give_up_at, d.lease_until, e.url, e.secret_ciphertext`;

/**
 * Data access of the webhooks service (schema `webhooks`). Every endpoint read and write filters
 * by the caller's org id; the delivery worker's statements (fan-out, claim, record) work across
 * organizations but always join a delivery to its own endpoint, whose org it copies.
 */
export class WebhooksRepository {
  constructor(private readonly db: DataSource) {}

  /** Inserts an endpoint and its `webhook_endpoint.created` audit event (never the secret), in one transaction. */
  async insertEndpoint(row: EndpointRow, origin?: AuditOrigin): Promise<void> {
    await this.db.transaction(async (m) => {
      await m.query(
        `INSERT INTO webhook_endpoints (id, org_id, url, events, description, enabled, secret_ciphertext, created_at, updated_at)
         VALUES ($1, $2, $3, $4::text[], $5, $6, $7, $8, $9)`,
        [row.id, row.org_id, row.url, row.events, row.description, row.enabled, row.secret_ciphertext, row.created_at, row.updated_at],
      );
      await recordAuditEvent(m, {
        orgId: row.org_id,
        action: 'webhook_endpoint.created',
        resourceType: 'webhook_endpoint',
        resourceId: row.id,
        origin,
        at: row.created_at,
        data: { after: auditEndpoint(row) },
      });
    });
  }

  async findEndpoint(orgId: string, id: string): Promise<EndpointRow | null> {
    const rows: EndpointRow[] = await this.db.query(`SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE org_id = $1 AND id = $2`, [orgId, id]);
    return rows[0] ?? null;
  }

  /** Endpoints of the org, newest first. */
  async listEndpoints(orgId: string, limit: number, offset: number): Promise<{ rows: EndpointRow[]; total: number }> {
    const rows: EndpointRow[] = await this.db.query(
      `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE org_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3`,
      [orgId, limit, offset],
    );
    const [{ total }] = await this.db.query<{ total: number }[]>(`SELECT count(*)::int AS total FROM webhook_endpoints WHERE org_id = $1`, [orgId]);
    return { rows, total };
  }

  /**
   * Applies the given fields and records `webhook_endpoint.updated` (before/after of the given
   * fields), in one transaction.
   * @returns the updated row, or null when missing or another org's.
   */
  async updateEndpoint(
    orgId: string,
    id: string,
    patch: { url?: string; events?: string[]; description?: string | null; enabled?: boolean },
    origin?: AuditOrigin,
  ): Promise<EndpointRow | null> {
    return this.db.transaction(async (m) => {
      const [before]: EndpointRow[] = await m.query(`SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE org_id = $1 AND id = $2 FOR UPDATE`, [orgId, id]);
      if (!before) return null;
      const rows = rowsOf<EndpointRow>(
        await m.query(
          `UPDATE webhook_endpoints SET
           url = COALESCE($3, url),
           events = COALESCE($4::text[], events),
           description = CASE WHEN $5 THEN $6 ELSE description END,
           enabled = COALESCE($7, enabled),
           updated_at = now()
         WHERE org_id = $1 AND id = $2 RETURNING ${ENDPOINT_COLUMNS}`,
          [orgId, id, patch.url ?? null, patch.events ?? null, patch.description !== undefined, patch.description ?? null, patch.enabled ?? null],
        ),
      );
      const after = rows[0];
      const fields = (Object.keys(patch) as (keyof typeof patch)[]).filter((f) => patch[f] !== undefined);
      await recordAuditEvent(m, {
        orgId,
        action: 'webhook_endpoint.updated',
        resourceType: 'webhook_endpoint',
        resourceId: id,
        origin,
        data: { before: Object.fromEntries(fields.map((f) => [f, before[f]])), after: Object.fromEntries(fields.map((f) => [f, after[f]])) },
      });
      return after;
    });
  }

  /** Deletes an endpoint and its delivery log, with its `webhook_endpoint.deleted` audit event. @returns whether it existed. */
  async deleteEndpoint(orgId: string, id: string, origin?: AuditOrigin): Promise<boolean> {
    return this.db.transaction(async (m) => {
      const deleted = rowsOf<EndpointRow>(
        await m.query(`DELETE FROM webhook_endpoints WHERE org_id = $1 AND id = $2 RETURNING ${ENDPOINT_COLUMNS}`, [orgId, id]),
      );
      if (deleted.length === 0) return false;
      await recordAuditEvent(m, {
        orgId,
        action: 'webhook_endpoint.deleted',
        resourceType: 'webhook_endpoint',
        resourceId: id,
        origin,
        data: { before: auditEndpoint(deleted[0]) },
      });
      return true;
    });
  }

  /** The endpoint's deliveries, newest first. */
  async listDeliveries(orgId: string, endpointId: string, limit: number, offset: number): Promise<{ rows: DeliveryRow[]; total: number }> {
    const rows: DeliveryRow[] = await this.db.query(
      `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE org_id = $1 AND endpoint_id = $2 ORDER BY created_at DESC, seq DESC LIMIT $3 OFFSET $4`,
      [orgId, endpointId, limit, offset],
    );
    const [{ total }] = await this.db.query<{ total: number }[]>(
      `SELECT count(*)::int AS total FROM webhook_deliveries WHERE org_id = $1 AND endpoint_id = $2`,
      [orgId, endpointId],
    );
    return { rows, total };
  }

  /**
   * Manual retry: the delivery goes (back) to `pending`, due now, with a new retry window of
   * `windowMs`; an attempt in flight is left to finish (its lease is kept).
   * @returns the delivery, or null when it is not one of this org's endpoint's deliveries.
   */
  async retryDelivery(orgId: string, endpointId: string, deliveryId: string, windowMs: number, origin?: AuditOrigin): Promise<DeliveryRow | null> {
    return this.db.transaction(async (m) => {
      const [before]: { status: string }[] = await m.query(
        `SELECT status FROM webhook_deliveries WHERE org_id = $1 AND endpoint_id = $2 AND id = $3 FOR UPDATE`,
        [orgId, endpointId, deliveryId],
      );
      if (!before) return null;
      const rows = rowsOf<DeliveryRow>(
        await m.query(
          `UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = now(), give_up_at = now() + $4 * interval '1 millisecond'
         WHERE org_id = $1 AND endpoint_id = $2 AND id = $3 RETURNING ${DELIVERY_COLUMNS}`,
          [orgId, endpointId, deliveryId, windowMs],
        ),
      );
      await recordAuditEvent(m, {
        orgId,
        action: 'webhook_delivery.retried',
        resourceType: 'webhook_delivery',
        resourceId: deliveryId,
        origin,
        data: { endpoint_id: endpointId, before: { status: before.status }, after: { status: rows[0].status } },
      });
      return rows[0] ?? null;
    });
  }

  /**
   * Fan-out of one event: one pending delivery per enabled endpoint of the event's org that
   * subscribes to its type (or to `*`). Idempotent per (endpoint, event).
   * @returns how many deliveries were created.
   */
  async fanOut(event: { id: string; type: string; orgId: string; resourceKey: string; payload: unknown }, windowMs: number): Promise<number> {
    const rows = rowsOf(
      await this.db.query(
        `INSERT INTO webhook_deliveries (id, endpoint_id, org_id, event_id, event_type, resource_key, payload, created_at, next_attempt_at, give_up_at)
         SELECT gen_random_uuid(), e.id, e.org_id, $2, $3, $4, $5::jsonb, now(), now(), now() + $6 * interval '1 millisecond'
         FROM webhook_endpoints e
         WHERE e.org_id = $1 AND e.enabled AND ($3 = ANY(e.events) OR '*' = ANY(e.events))
         ORDER BY e.id
         ON CONFLICT (endpoint_id, event_id) DO NOTHING
         RETURNING id`,
        [event.orgId, event.id, event.type, event.resourceKey, JSON.stringify(event.payload), windowMs],
      ),
    );
    return rows.length;
  }

  /**
   * Claims up to `limit` deliveries to attempt now: for each (endpoint, resource) only the oldest
   * pending delivery (per-resource order), if it is due, its endpoint enabled, and no attempt of it
   * is in flight (no live lease). Claiming counts the attempt and leases the delivery for
   * `leaseMs`; rows locked by another worker are skipped.
   */
  async claimDue(limit: number, leaseMs: number): Promise<ClaimedDelivery[]> {
    return rowsOf<ClaimedDelivery>(
      await this.db.query(
        `WITH heads AS (
           SELECT DISTINCT ON (endpoint_id, resource_key) id
           FROM webhook_deliveries WHERE status = 'pending'
           ORDER BY endpoint_id, resource_key, seq
         ), due AS (
           SELECT d.id FROM webhook_deliveries d
           JOIN heads h ON h.id = d.id
           JOIN webhook_endpoints e ON e.id = d.endpoint_id AND e.enabled
           WHERE d.status = 'pending' AND d.next_attempt_at <= now() AND (d.lease_until IS NULL OR d.lease_until < now())
           ORDER BY d.next_attempt_at, d.seq
           LIMIT $1
           FOR UPDATE OF d SKIP LOCKED
         )
         UPDATE webhook_deliveries d SET attempts = d.attempts + 1, last_attempt_at = now(), lease_until = now() + $2 * interval '1 millisecond'
         FROM due, webhook_endpoints e
         WHERE d.id = due.id AND e.id = d.endpoint_id
         RETURNING ${CLAIMED_COLUMNS}`,
        [limit, leaseMs],
      ),
    );
  }

  /**
   * Records an attempt's outcome, ending its lease: `succeeded`; or back to `pending` at
   * `nextAttemptAt`; or `failed` when `nextAttemptAt` is null (the retry window is over).
   */
  async recordAttempt(
    id: string,
    outcome: { status: DeliveryStatus; responseStatus: number | null; error: string | null; nextAttemptAt: Date | null },
  ): Promise<void> {
    await this.db.query(
      `UPDATE webhook_deliveries SET status = $2, response_status = $3, last_error = $4, next_attempt_at = COALESCE($5, next_attempt_at), lease_until = NULL
       WHERE id = $1`,
      [id, outcome.status, outcome.responseStatus, outcome.error, outcome.nextAttemptAt],
    );
  }

  /** Earliest time a pending head delivery becomes due (null when none). Lets the dispatcher sleep until then. */
  async nextDueAt(): Promise<Date | null> {
    const [row] = await this.db.query<{ at: Date | null }[]>(
      `SELECT min(GREATEST(next_attempt_at, COALESCE(lease_until, next_attempt_at))) AS at FROM webhook_deliveries WHERE status = 'pending'`,
    );
    return row?.at ?? null;
  }
}

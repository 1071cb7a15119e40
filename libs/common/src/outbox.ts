import type { NatsConnection } from 'nats';
import { randomUUID } from 'node:crypto';
import type { DataSource, EntityManager } from 'typeorm';
import type { Logger } from './logger';
import { sqlMigration } from './migrations';
import { publishEvent } from './nats';

/**
 * The transactional outbox of webhook events (docs/webhooks.md "How an event leaves a service").
 * A service that changes a resource's state inserts the event into its own `webhook_outbox` table
 * (in its own schema) with {@link enqueueWebhookEvent}, passing the transaction's EntityManager,
 * so the event exists if and only if the change was committed. {@link startOutboxRelay} then
 * publishes the rows in sequence order to JetStream and deletes them. Pattern: "Transactional
 * outbox", C. Richardson, microservices.io/patterns/data/transactional-outbox.html.
 */

/** DDL of the outbox table, run by {@link WebhookOutbox1764000000000} (unqualified: the service's schema). */
export const WEBHOOK_OUTBOX_DDL = [
  `CREATE TABLE webhook_outbox (
     seq bigserial PRIMARY KEY,
     id uuid NOT NULL UNIQUE,
     org_id text NOT NULL,
     type text NOT NULL,
     resource_key text NOT NULL,
     payload jsonb NOT NULL,
     created_at timestamptz NOT NULL
   )`,
];

/**
 * The migration creating the outbox table, listed by every service that produces webhook events
 * (agent: batch.completed/failed; check: check_run.completed/failed/stopped; documents:
 * document.ready/completed/failed/deleted; docs/webhooks.md), each in its own schema under this
 * one name.
 */
export const WebhookOutbox1764000000000 = sqlMigration('WebhookOutbox1764000000000', { up: WEBHOOK_OUTBOX_DDL, down: [`DROP TABLE webhook_outbox`] });

/** An event as the producing service knows it (the payload decisions.md fixes, without its id). */
export interface OutboxEventInput {
  /** One of WEBHOOK_EVENT_TYPES of @kb/events, e.g. `document.ready`. */
  type: string;
  orgId: string;
  /** `<kind>:<id>` of the resource (`document:…`, `check_run:…`, `batch:…`): the ordering key. */
  resourceKey: string;
  /** The resource as its GET returns it. */
  data: Record<string, unknown>;
  /** Time of the state change (default now). */
  at?: Date;
}

/**
 * Inserts webhook events into the outbox within the caller's transaction (`m` must be the
 * transaction's EntityManager for the "same transaction" guarantee).
 * @returns the event ids (UUIDs), in order.
 */
export async function enqueueWebhookEvents(m: EntityManager | DataSource, events: OutboxEventInput[]): Promise<string[]> {
  if (events.length === 0) return [];
  const ids = events.map(() => randomUUID());
  const payloads = events.map((e, i) => ({
    id: ids[i],
    type: e.type,
    created_at: (e.at ?? new Date()).toISOString(),
    org_id: e.orgId,
    data: e.data,
  }));
  await m.query(
    `INSERT INTO webhook_outbox (id, org_id, type, resource_key, payload, created_at)
     SELECT x.id, x.org_id, x.type, x.resource_key, x.payload, x.created_at
     FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::jsonb[], $6::timestamptz[]) WITH ORDINALITY
       AS x(id, org_id, type, resource_key, payload, created_at, ord)
     ORDER BY x.ord`,
    [
      ids,
      events.map((e) => e.orgId),
      events.map((e) => e.type),
      events.map((e) => e.resourceKey),
      payloads.map((p) => JSON.stringify(p)),
      payloads.map((p) => p.created_at),
    ],
  );
  return ids;
}

/** One event: {@link enqueueWebhookEvents} of a single item. */
export async function enqueueWebhookEvent(m: EntityManager | DataSource, event: OutboxEventInput): Promise<string> {
  return (await enqueueWebhookEvents(m, [event]))[0];
}

interface OutboxRow {
  seq: string;
  id: string;
  type: string;
  resource_key: string;
  payload: Record<string, unknown>;
}

/**
 * Publishes the outbox to JetStream: every `intervalMs` (and at once after {@link wake}), the
 * oldest rows (batches of `batchSize`) are published in sequence order on
 * the subject `subjectFor` names (`webhooks.events.<partition>.<type>`) with the event id as JetStream msgID (a row published twice after a
 * crash is de-duplicated by the stream within its window; the webhooks service also ignores an
 * event it already fanned out), then deleted. A transaction-level advisory lock per schema lets one
 * replica relay at a time, which keeps the published order equal to the commit order of a
 * resource's changes. At least once: a row is deleted only after JetStream acknowledged it.
 * @returns `wake()` (relay now) and `stop()`.
 */
export function startOutboxRelay(options: {
  db: DataSource;
  nc: NatsConnection;
  logger: Logger;
  /** Lock name; the service's schema, e.g. `documents`. */
  name: string;
  /** Subject of an event (`webhookEventSubject` of @kb/events). */
  subjectFor: (type: string, resourceKey: string) => string;
  intervalMs?: number;
  batchSize?: number;
}): { wake: () => void; stop: () => Promise<void> } {
  const intervalMs = options.intervalMs ?? 250;
  const batchSize = options.batchSize ?? 100;
  let stopped = false;
  let running: Promise<void> | null = null;
  let again = false;

  const relayOnce = async (): Promise<number> =>
    options.db.transaction(async (m) => {
      const [{ locked }] = await m.query<{ locked: boolean }[]>(`SELECT pg_try_advisory_xact_lock(hashtext($1)) AS locked`, [
        `kb-webhook-outbox:${options.name}`,
      ]);
      if (!locked) return 0;
      const rows: OutboxRow[] = await m.query(`SELECT seq::text AS seq, id, type, resource_key, payload FROM webhook_outbox ORDER BY seq LIMIT $1`, [
        batchSize,
      ]);
      for (const row of rows) {
        await publishEvent(
          options.nc,
          options.subjectFor(row.type, row.resource_key),
          { event: row.payload, resourceKey: row.resource_key, sequence: Number(row.seq) },
          row.id,
        );
      }
      if (rows.length > 0) await m.query(`DELETE FROM webhook_outbox WHERE seq = ANY($1::bigint[])`, [rows.map((r) => r.seq)]);
      return rows.length;
    });

  const run = () => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = (async () => {
      do {
        again = false;
        try {
          while (!stopped && (await relayOnce()) === batchSize) {
            /* a full batch: more may be waiting */
          }
        } catch (err) {
          options.logger.warn({ err }, 'webhook outbox relay failed; retrying');
        }
      } while (again && !stopped);
    })().finally(() => {
      running = null;
    });
  };
  const timer = setInterval(run, intervalMs);
  run();
  return {
    wake: run,
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}

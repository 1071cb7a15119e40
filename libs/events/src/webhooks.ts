import { agentV1, checkV1, documentsV1 } from '@kb/proto';
import { pickSnakeFields, type ServiceRuntime } from '@kb/common';
import type { NatsConnection } from 'nats';
import type { DataSource } from 'typeorm';
import { batchStatus, documentStatus, requirementStatus, runStatus, subRequirementStatus } from './statuses';

/**
 * Webhook events (decisions.md "Webhooks"). A service that changes a resource's state writes the
 * event to its own `webhook_outbox` table in the same transaction as the change (see
 * `enqueueWebhookEvent` / `startOutboxRelay` of `@kb/common`); the relay publishes it to the
 * `KB_WEBHOOKS` stream; the webhooks service fans it out to the organization's endpoints and
 * delivers it.
 */
export const WEBHOOKS_STREAM = 'KB_WEBHOOKS';
export const WEBHOOKS_STREAM_SUBJECTS = ['webhooks.>'];
export const WebhookSubjects = {
  /** outbox relays → webhooks service: one event (subject `webhooks.events.<partition>.<type>`). */
  eventPrefix: 'webhooks.events',
} as const;

/**
 * The event types of decisions.md, in the order it lists them: the nine of "Webhooks", then
 * `check_run.requirement_reviewed` ("Review of check results").
 */
export const WEBHOOK_EVENT_TYPES = [
  'document.ready',
  'document.completed',
  'document.failed',
  'document.deleted',
  'check_run.completed',
  'check_run.failed',
  'check_run.stopped',
  'batch.completed',
  'batch.failed',
  'check_run.requirement_reviewed',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** The payload delivered to an endpoint (the request body), as decisions.md states it. */
export interface WebhookEvent {
  /** UUID of the event; also the `webhook-id` header (the same on every attempt). */
  id: string;
  type: WebhookEventType;
  /** ISO 8601 UTC time of the state change. */
  created_at: string;
  org_id: string;
  /**
   * The resource as its GET returns it (without `requirements` or `results`); for
   * `check_run.requirement_reviewed`, the requirement with its `review` (as `GET …/requirements` lists it).
   */
  data: Record<string, unknown>;
}

/**
 * What the relay publishes on `webhooks.events.<type>`: the event, the resource it is about
 * (`document:<id>`, `check_run:<id>`, `batch:<id>`: events of one resource are delivered in
 * order) and the outbox sequence number (ordering within one resource, which lives in one
 * service's outbox).
 */
export interface WebhookEventMessage {
  event: WebhookEvent;
  resourceKey: string;
  sequence: number;
}

/**
 * Fan-out partitions: events are spread over this many subjects by resource
 * (`webhooks.events.<partition>.<type>`), each fanned out by its own strictly ordered durable
 * consumer (`webhooks-fanout-<partition>`), so one resource's events keep their order while
 * different resources are fanned out in parallel. Fixed: changing it would let a resource's
 * events be split across partitions while old ones are still queued (the Helm chart's KEDA
 * triggers name the same eight consumers).
 */
export const WEBHOOK_FANOUT_PARTITIONS = 8;

/** Partition of a resource: 32-bit FNV-1a of its key (`document:<id>` …) modulo {@link WEBHOOK_FANOUT_PARTITIONS}. */
export function webhookPartition(resourceKey: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < resourceKey.length; i++) {
    hash ^= resourceKey.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % WEBHOOK_FANOUT_PARTITIONS;
}

/** Subject of one event on the KB_WEBHOOKS stream: `webhooks.events.<partition>.<type>`. */
export function webhookEventSubject(type: string, resourceKey: string): string {
  return `${WebhookSubjects.eventPrefix}.${webhookPartition(resourceKey)}.${type}`;
}

/**
 * The NATS connection of a service that writes webhook events with its state changes (documents, check, agent):
 * opened with the service's own JetStream `streams` followed by the webhooks stream, and the service's webhook
 * outbox relay started on it (rows of `db`'s outbox published to {@link webhookEventSubject}, every
 * `WEBHOOK_OUTBOX_INTERVAL_MS`; docs/webhooks.md). Both are closed by `runtime` at shutdown.
 * @param streams `[stream name, subjects]` pairs, in the order they are created.
 * @throws NATS's connection error (ServiceRuntime.nats).
 */
export async function natsWithWebhookOutbox(
  runtime: ServiceRuntime,
  db: DataSource,
  config: { NATS_URL: string; WEBHOOK_OUTBOX_INTERVAL_MS: number },
  streams: ReadonlyArray<readonly [name: string, subjects: string[]]>,
): Promise<NatsConnection> {
  const nc = await runtime.nats(config.NATS_URL, [...streams, [WEBHOOKS_STREAM, WEBHOOKS_STREAM_SUBJECTS]]);
  runtime.webhookOutbox(db, nc, { intervalMs: config.WEBHOOK_OUTBOX_INTERVAL_MS, subjectFor: webhookEventSubject });
  return nc;
}

/** Document resource as the API shows it (service-api.md §2 "Document"): GET /api/v2/documents/{id}. */
export function presentDocument(d: documentsV1.Document) {
  return {
    ...pickSnakeFields(d, ['id', 'orgId', 'projectId', 'fileName', 'contentType', 'sizeBytes'], null),
    status: documentStatus.fromProto(d.status),
    ...pickSnakeFields(d, ['chunkCount', 'errorMessage', 'createdAt', 'updatedAt'], null),
    progress: d.progress ? pickSnakeFields(d.progress, ['stage', 'pagesDone', 'pagesTotal'], null) : null,
    // decisions.md "Document versions"; rows from before versions are version 1.
    version: d.version || 1,
    ...pickSnakeFields(d, ['replaces', 'supersededBy'], null),
  };
}

/**
 * Check run as GET /api/v2/check/runs/{id} shows it, without `requirements`. `review_summary`
 * (`{ reviewed, passed, failed }`) counts with people's reviews applied; the `*_requirements`
 * counters stay the machine's. `source_run_id`: the run it re-runs, null for a run created directly.
 */
export function presentRun(r: checkV1.CheckRun) {
  return {
    ...pickSnakeFields(r, ['id', 'name', 'orgId', 'projectId'], null),
    status: runStatus.fromProto(r.status),
    ...pickSnakeFields(
      r,
      [
        'totalRequirements',
        'processedRequirements',
        'passedRequirements',
        'failedRequirements',
        'handbookIds',
        'errorMessage',
        'processingStartedAt',
        'processingCompletedAt',
        'createdAt',
        'updatedAt',
        'sourceRunId',
      ],
      null,
    ),
    review_summary: {
      reviewed: r.reviewSummary?.reviewed ?? 0,
      passed: r.reviewSummary?.passed ?? 0,
      failed: r.reviewSummary?.failed ?? 0,
    },
  };
}

/**
 * Where a quote stands, as the API shows it on every source and citation (decisions.md "Where a
 * quote stands (for highlighting)"): `location` `{ char_start, char_end }` (the quote's offsets in
 * the chunk's `text`; null when it was stored before locations existed) and `boxes`
 * `[{ page, x0, y0, x1, y1 }]` (PDF points, origin at the page's top-left, one per line of the
 * quote, pages 1-based; `[]` for formats without pages).
 */
export function presentPlacement(p: {
  location?: { charStart: number; charEnd: number } | undefined;
  boxes?: { page: number; x0: number; y0: number; x1: number; y1: number }[];
}) {
  return {
    location: p.location ? { char_start: p.location.charStart, char_end: p.location.charEnd } : null,
    boxes: (p.boxes ?? []).map((b) => ({ page: b.page, x0: b.x0, y0: b.y0, x1: b.x1, y1: b.y1 })),
  };
}

/**
 * A source as the API shows it everywhere (verify `sources`, sub-requirement `sources`;
 * decisions.md "Vocabulary" and "Chunks"): `node_id` is the chunk, fetchable at
 * `GET /api/v2/documents/{handbook_id}/chunks/{node_id}`; `section` its heading path or null;
 * `location` and `boxes` where its evidence quote stands ({@link presentPlacement}).
 */
export function presentSource(s: checkV1.Source) {
  return { ...pickSnakeFields(s, ['handbookId', 'nodeId', 'title', 'startPage', 'endPage', 'section'], null), ...presentPlacement(s) };
}

/**
 * A person's review of a requirement as the API shows it (decisions.md "Review of check results"):
 * `{ decision: 'pass'|'fail', comment: string|null, reviewer, reviewed_at, outdated }`, or null when
 * the requirement has no review.
 */
export function presentReview(v: checkV1.RequirementReview | undefined) {
  if (!v) return null;
  return { decision: v.decision, comment: v.comment ?? null, reviewer: v.reviewer, reviewed_at: v.reviewedAt, outdated: v.outdated };
}

/**
 * A requirement of a check run as `GET /api/v2/check/runs/{id}/requirements` lists it (and the run
 * detail and the `check_run.requirement_reviewed` event show it): its sub-requirements (`sources`
 * null until judged), client `metadata` (object or null) and `review` (null until reviewed).
 */
export function presentRequirement(q: checkV1.Requirement) {
  return {
    id: q.id,
    run_id: q.runId,
    text: q.text,
    order_index: q.orderIndex,
    status: requirementStatus.fromProto(q.status),
    metadata: q.metadataJson ? (JSON.parse(q.metadataJson) as Record<string, unknown>) : null,
    sub_requirements: q.subRequirements.map((s) => ({
      id: s.id,
      requirement_id: s.requirementId,
      text: s.text,
      justification: s.justification,
      score: s.score,
      status: subRequirementStatus.fromProto(s.status),
      sources: s.hasSources ? s.sources.map(presentSource) : null,
    })),
    review: presentReview(q.review),
    created_at: q.createdAt,
    updated_at: q.updatedAt,
  };
}

/**
 * A requirement's machine outcome in a comparison: `{ result: 'pass'|'fail'|'pending', score:
 * number|null (lowest sub-requirement score), evidence: string[] (quotes), sources }`, or null when the
 * requirement is not in that run.
 */
export function presentOutcome(o: checkV1.RequirementOutcome | undefined) {
  if (!o) return null;
  return { result: o.result, score: o.score ?? null, evidence: o.evidence, sources: o.sources.map(presentSource) };
}

/**
 * The comparison of two check runs as GET /api/v2/check/runs/{id}/compare?with= returns it
 * (decisions.md "Re-running and comparing check runs"): `before` is the `{id}` run's outcome,
 * `after` the `with` run's.
 */
export function presentComparison(c: checkV1.RunComparison) {
  return {
    run_id: c.runId,
    with_run_id: c.withRunId,
    summary: {
      unchanged: c.summary?.unchanged ?? 0,
      changed: c.summary?.changed ?? 0,
      only_in_run: c.summary?.onlyInRun ?? 0,
      only_in_with: c.summary?.onlyInWith ?? 0,
    },
    changes: c.changes.map((x) => ({ order_index: x.orderIndex, text: x.text, before: presentOutcome(x.before), after: presentOutcome(x.after) })),
  };
}

/** Batch summary as GET /api/v2/agent/batches/{id} shows it, without `results` (decisions.md "Batches"). */
export function presentBatch(b: agentV1.Batch) {
  return {
    ...pickSnakeFields(b, ['id', 'name', 'orgId', 'projectId', 'chatType'], null),
    status: batchStatus.fromProto(b.status),
    ...pickSnakeFields(b, ['totalQuestions', 'processedQuestions', 'failedQuestions', 'createdAt', 'updatedAt'], null),
  };
}

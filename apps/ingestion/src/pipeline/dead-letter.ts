/**
 * Dead-lettering of `documents.process.requested` messages that cannot be processed.
 *
 * - A malformed payload (not JSON, or missing the fields of {@link ProcessRequestedEvent}) is
 *   dead-lettered at once and acknowledged: retrying cannot help.
 * - A message whose every delivery crashed the worker or ran past the ack wait reaches the
 *   consumer's `max_deliver`; JetStream then publishes the advisory
 *   `$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.<stream>.<consumer>` (NATS docs, "JetStream
 *   advisories"). The handler here fetches the original message by its stream sequence, publishes
 *   it to `documents.process.dead_letter` and reports the document `failed` with a reason, so it
 *   does not wait for the sweeper.
 */
import { Logger, NatsConnection, publishEvent } from '@kb/common';
import { DOCUMENTS_STREAM, ProcessDeadLetterEvent, ProcessRequestedEvent, StatusChangedEvent, Subjects } from '@kb/events';
import { z } from 'zod';

/**
 * Shape check of a process request (the fields the pipeline uses). Ids are checked with `z.guid()`, any
 * 8-4-4-4-12 hex string as PostgreSQL's uuid type accepts it, not `z.uuid()`, which also requires the
 * RFC 9562 version and variant digits.
 */
const processRequestedSchema = z.object({
  documentId: z.guid(),
  orgId: z.string().min(1),
  projectId: z.guid().nullable().optional(),
  fileName: z.string().min(1),
  contentType: z.string().min(1),
  sizeBytes: z.number().int().nonnegative(),
  storageKey: z.string().min(1),
});

/** Returns null when `payload` is a usable {@link ProcessRequestedEvent}, else why not. */
export function processRequestProblem(payload: unknown): string | null {
  const r = processRequestedSchema.safeParse(payload);
  if (r.success) return null;
  return r.error.issues.map((i) => `${i.path.join('.') || 'payload'}: ${i.message}`).join('; ');
}

/** Message shown to users for a document whose processing crashed on every attempt. */
export function crashedMessage(deliveries: number): string {
  return (
    `Processing stopped unexpectedly on each of ${deliveries} attempts (the file may be too complex or damaged). ` +
    'Try a re-saved copy of the file, or split it into smaller files and upload them.'
  );
}

export interface DeadLetterDeps {
  nc: NatsConnection;
  logger: Logger;
  durable: string;
  publishStatus: (event: StatusChangedEvent) => Promise<void>;
  deleteChunks: (orgId: string, documentId: string) => Promise<void>;
}

/** Publishes one dead letter (idempotent per stream sequence through the stream's duplicate window). */
export async function publishDeadLetter(nc: NatsConnection, letter: ProcessDeadLetterEvent): Promise<void> {
  await publishEvent(nc, Subjects.processDeadLetter, letter, letter.streamSequence === null ? undefined : `dead-letter:${letter.streamSequence}`);
}

interface MaxDeliveriesAdvisory {
  stream: string;
  consumer: string;
  stream_seq: number;
  deliveries: number;
}

/**
 * Listens for the max-deliveries advisories of the ingestion consumer (queue group, so one
 * replica handles each) and dead-letters those messages. Returns a function that unsubscribes.
 */
export function watchMaxDeliveries(deps: DeadLetterDeps): () => void {
  const subject = `$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.${DOCUMENTS_STREAM}.${deps.durable}`;
  const sub = deps.nc.subscribe(subject, { queue: `${deps.durable}-dead-letter` });
  void (async () => {
    for await (const m of sub) {
      try {
        const advisory = JSON.parse(Buffer.from(m.data).toString('utf8')) as MaxDeliveriesAdvisory;
        await handleMaxDeliveries(deps, advisory);
      } catch (err) {
        deps.logger.error({ err }, 'could not dead-letter a message after max deliveries');
      }
    }
  })();
  return () => sub.unsubscribe();
}

async function handleMaxDeliveries(deps: DeadLetterDeps, advisory: MaxDeliveriesAdvisory): Promise<void> {
  const jsm = await deps.nc.jetstreamManager();
  const msg = await jsm.streams.getMessage(advisory.stream, { seq: advisory.stream_seq });
  const payload = Buffer.from(msg.data).toString('utf8');
  let event: ProcessRequestedEvent | null = null;
  try {
    const parsed: unknown = JSON.parse(payload);
    if (processRequestProblem(parsed) === null) event = parsed as ProcessRequestedEvent;
  } catch {
    event = null;
  }
  await publishDeadLetter(deps.nc, {
    subject: msg.subject,
    streamSequence: advisory.stream_seq,
    deliveries: advisory.deliveries,
    reason: event ? 'max deliveries reached (every delivery crashed or timed out)' : 'malformed payload after max deliveries',
    payload,
    documentId: event?.documentId ?? null,
    at: new Date().toISOString(),
  });
  deps.logger.warn({ stream_seq: advisory.stream_seq, deliveries: advisory.deliveries, document_id: event?.documentId }, 'message dead-lettered');
  if (event) {
    await deps.deleteChunks(event.orgId, event.documentId).catch((err) => deps.logger.warn({ err }, 'could not remove chunks of a dead-lettered document'));
    await deps.publishStatus({
      documentId: event.documentId,
      orgId: event.orgId,
      status: 'failed',
      chunkCount: null,
      pageCount: null,
      errorMessage: crashedMessage(advisory.deliveries),
      at: new Date().toISOString(),
    });
  }
}

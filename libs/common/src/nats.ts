import {
  AckPolicy,
  connect,
  ConsumerMessages,
  DeliverPolicy,
  headers as natsHeaders,
  JsMsg,
  nanos,
  NatsConnection,
  RetentionPolicy,
  StorageType,
} from 'nats';
import { randomUUID } from 'node:crypto';
import { currentContext, Logger, runWithContext } from './logger';
import { REQUEST_ID_METADATA_KEY } from './grpc';
import { metrics, registerConsumerLag, withConsumerSpan, withProducerSpan } from '@kb/telemetry'; // [telemetry]

/** Connects to NATS (NATS_URL), retrying the initial connection for up to `waitMs` (default 30 s). */
export async function connectNats(url: string, name: string, waitMs = 30_000): Promise<NatsConnection> {
  return connect({
    servers: url.split(','),
    name,
    waitOnFirstConnect: true,
    timeout: waitMs,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
  });
}

/** Creates the JetStream stream if missing, or updates its subjects. File storage, limits retention. */
export async function ensureStream(nc: NatsConnection, name: string, subjects: string[]): Promise<void> {
  const jsm = await nc.jetstreamManager();
  try {
    const info = await jsm.streams.info(name);
    const missing = subjects.filter((s) => !info.config.subjects?.includes(s));
    if (missing.length > 0) {
      await jsm.streams.update(name, { ...info.config, subjects: [...(info.config.subjects ?? []), ...missing] });
    }
  } catch (e) {
    if (!String((e as Error).message).includes('stream not found')) throw e;
    await jsm.streams.add({
      name,
      subjects,
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
      max_age: nanos(7 * 24 * 3600 * 1000),
      duplicate_window: nanos(2 * 60 * 1000),
    });
  }
}

/**
 * Publishes a JSON event to JetStream and waits for the stream's ack. `msgId` makes the publish
 * idempotent within the stream's duplicate window. The current request id travels in a header,
 * and the trace context (W3C `traceparent`) too, so the consumer continues the publisher's trace.
 */
export async function publishEvent(nc: NatsConnection, subject: string, payload: unknown, msgId?: string): Promise<void> {
  const h = natsHeaders();
  h.set(REQUEST_ID_METADATA_KEY, currentContext()?.requestId ?? randomUUID());
  // [telemetry] PRODUCER span; traceparent written into the headers.
  await withProducerSpan(subject, h, () => nc.jetstream().publish(subject, Buffer.from(JSON.stringify(payload)), { headers: h, msgID: msgId }));
}

/** What a handler learns about the delivery it is processing. */
export interface Delivery {
  /** 1-based delivery attempt. */
  attempt: number;
  maxDeliver: number;
  isLastAttempt: boolean;
}

export interface ConsumerOptions<T> {
  stream: string;
  durable: string;
  filterSubject: string;
  /** How long JetStream waits for an ack before redelivering (ms). Heartbeats extend it while work runs. */
  ackWaitMs: number;
  /** Deliveries before JetStream gives up on a message. */
  maxDeliver: number;
  /** Messages processed at once by this process. */
  concurrency: number;
  /** Delay before a failed message is redelivered (ms), multiplied by the attempt number. */
  retryDelayMs?: number;
  logger: Logger;
  /** Resolves: ack. Rejects: nak with backoff (redelivered until maxDeliver). */
  handler: (payload: T, delivery: Delivery) => Promise<void>;
}

/**
 * Runs a durable JetStream pull consumer with explicit acks, bounded concurrency, progress
 * heartbeats (`working()`) while a handler runs, and backoff on failure. At-least-once: handlers
 * must be idempotent. Each message is handled inside a CONSUMER span continuing the publisher's
 * trace (headers), and counted in the metrics of @kb/telemetry (outcome, duration, queue depth).
 *
 * @returns `stop()`, which stops pulling and waits for in-flight handlers.
 */
export async function runConsumer<T>(nc: NatsConnection, options: ConsumerOptions<T>): Promise<{ stop: () => Promise<void> }> {
  const jsm = await nc.jetstreamManager();
  const config = {
    durable_name: options.durable,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    ack_wait: nanos(options.ackWaitMs),
    max_deliver: options.maxDeliver,
    filter_subject: options.filterSubject,
    max_ack_pending: Math.max(options.concurrency * 4, 16),
  };
  try {
    await jsm.consumers.info(options.stream, options.durable);
    await jsm.consumers.update(options.stream, options.durable, config);
  } catch {
    await jsm.consumers.add(options.stream, config);
  }
  const consumer = await nc.jetstream().consumers.get(options.stream, options.durable);
  // [telemetry] queue depth (num_pending, num_ack_pending) read at every metrics scrape
  const unregisterLag = registerConsumerLag(options.stream, options.durable, async () => {
    const info = await jsm.consumers.info(options.stream, options.durable);
    return { pending: info.num_pending, ackPending: info.num_ack_pending };
  });
  const inFlight = new Set<Promise<void>>();
  let stopping = false;
  /** The pull request being served, closed by stop(). */
  let pulling: ConsumerMessages | null = null;

  // Messages are pulled only for free slots (`fetch` of `concurrency − in flight`), and each one
  // starts its handler, with heartbeats, the moment it arrives: no message ever waits in a client
  // buffer, where no heartbeat would extend its ack wait. (A `consume` buffer of `concurrency`
  // messages behind `concurrency` long documents was redelivered after `ack_wait` again and
  // again, and dead-lettered without ever being processed.)
  const startHeartbeat = (msg: JsMsg) => setInterval(() => msg.working(), Math.max(1000, Math.floor(options.ackWaitMs / 3)));
  const handle = async (msg: JsMsg, heartbeat: NodeJS.Timeout) => {
    const attempt = msg.info.redeliveryCount;
    const requestId = msg.headers?.get(REQUEST_ID_METADATA_KEY) || randomUUID();
    const stopTimer = metrics.natsHandlerDuration.startTimer({ consumer: options.durable }); // [telemetry]
    try {
      // [telemetry] continue the publisher's trace (traceparent header) in a CONSUMER span
      await withConsumerSpan(msg.subject, msg.headers, { 'messaging.consumer.group.name': options.durable, 'messaging.delivery_count': attempt }, async () => {
        try {
          const payload = JSON.parse(Buffer.from(msg.data).toString('utf8')) as T;
          await runWithContext({ requestId }, () =>
            options.handler(payload, { attempt, maxDeliver: options.maxDeliver, isLastAttempt: attempt >= options.maxDeliver }),
          );
          msg.ack();
          metrics.natsMessages.inc({ consumer: options.durable, outcome: 'ack' }); // [telemetry]
        } catch (error) {
          runWithContext({ requestId }, () => options.logger.warn({ err: error, subject: msg.subject, attempt }, 'event handler failed; will retry'));
          if (stopping) msg.nak();
          else msg.nak((options.retryDelayMs ?? 2000) * attempt);
          metrics.natsMessages.inc({ consumer: options.durable, outcome: 'nak' }); // [telemetry]
        }
      });
    } finally {
      stopTimer();
      clearInterval(heartbeat);
    }
  };

  const loop = (async () => {
    while (!stopping) {
      while (inFlight.size >= options.concurrency) await Promise.race(inFlight);
      if (stopping) break;
      try {
        pulling = await consumer.fetch({ max_messages: options.concurrency - inFlight.size, expires: PULL_EXPIRES_MS });
        for await (const msg of pulling) {
          const p = handle(msg, startHeartbeat(msg)).finally(() => inFlight.delete(p));
          inFlight.add(p);
        }
      } catch (error) {
        if (stopping) break;
        options.logger.warn({ err: error, consumer: options.durable }, 'pulling messages failed; retrying in 1 s');
        await new Promise((resolve) => setTimeout(resolve, 1000));
      } finally {
        pulling = null;
      }
    }
  })();

  return {
    stop: async () => {
      stopping = true;
      unregisterLag(); // [telemetry]
      await pulling?.close();
      await loop.catch(() => undefined);
      await Promise.allSettled([...inFlight]);
    },
  };
}

/**
 * Longest wait (ms) of one pull request that is not filled; then the next one is sent. A slot that
 * frees while a request is outstanding joins the next request, so it waits at most this long
 * (only while fewer messages are pending than slots: a full backlog fills a request at once).
 */
const PULL_EXPIRES_MS = 2000;

export type { NatsConnection };

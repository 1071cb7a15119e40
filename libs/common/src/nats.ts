import { AckPolicy, connect, DeliverPolicy, headers as natsHeaders, JsMsg, nanos, NatsConnection, RetentionPolicy, StorageType } from 'nats';
import { randomUUID } from 'node:crypto';
import { currentContext, Logger, runWithContext } from './logger';
import { REQUEST_ID_METADATA_KEY } from './grpc';
import { metrics, registerConsumerLag, withConsumerSpan, withProducerSpan } from '@kb/telemetry'; // [telemetry]

/** Connections of {@link connectNats} that lost their server and are reconnecting. */
const disconnected = new WeakSet<NatsConnection>();

/**
 * Connects to NATS (NATS_URL), retrying the initial connection for up to `waitMs` (default 30 s).
 * A lost server is reconnected forever, every 500 ms (nats-server restarted by the launcher, or
 * a cluster member back); meanwhile {@link publishEvent} fails at once instead of holding the
 * message for the JetStream publish timeout (5 s).
 */
export async function connectNats(url: string, name: string, waitMs = 30_000): Promise<NatsConnection> {
  const nc = await connect({
    servers: url.split(','),
    name,
    waitOnFirstConnect: true,
    timeout: waitMs,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
  });
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === 'disconnect') disconnected.add(nc);
      else if (status.type === 'reconnect') disconnected.delete(nc);
    }
  })().catch(() => undefined);
  return nc;
}

/** Thrown by {@link publishEvent} while the connection has no server (it is reconnecting). */
export class NatsUnavailableError extends Error {
  constructor() {
    super('NATS is unavailable: the connection is reconnecting to its server.');
    this.name = 'NatsUnavailableError';
  }
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
 * @throws NatsUnavailableError at once while a {@link connectNats} connection is reconnecting;
 *   the nats.js timeout error when the stream does not acknowledge within 5 s.
 */
export async function publishEvent(nc: NatsConnection, subject: string, payload: unknown, msgId?: string): Promise<void> {
  if (disconnected.has(nc)) throw new NatsUnavailableError();
  const h = natsHeaders();
  h.set(REQUEST_ID_METADATA_KEY, currentContext()?.requestId ?? randomUUID());
  // [telemetry] PRODUCER span; traceparent written into the headers.
  await withProducerSpan(subject, h, () => nc.jetstream().publish(subject, Buffer.from(JSON.stringify(payload)), { headers: h, msgID: msgId }));
}

/**
 * The redelivery setting of every JetStream consumer of the platform (docs/architecture.md, "Crash
 * recovery"): a delivery that is neither acknowledged nor heartbeated for this long (ms) is handed to
 * another worker. While a handler runs, {@link runConsumer} heartbeats it (`msg.working()`, which
 * restarts the server's ack timer) every {@link heartbeatIntervalMs}, so a slow but alive step is
 * never redelivered; a killed worker's work is taken over between `ack wait - heartbeat interval`
 * and `ack wait` after the kill. 10 s keeps that takeover pause under the 15 s of issue 15 while a
 * worker's event loop may stall up to 8 s (the ack wait less one heartbeat interval) before a
 * live delivery is at risk; stalls over half the ack wait are logged ("heartbeat late").
 * Per-service variables (INGESTION_ACK_WAIT_MS, CHECK_RUN_ACK_WAIT_MS, AGENT_BATCH_ACK_WAIT_MS)
 * default to it.
 */
export const JETSTREAM_ACK_WAIT_MS = 10_000;

/**
 * Heartbeat period (ms) of deliveries in progress for a consumer whose ack wait is `ackWaitMs`: a
 * fifth of it (2 s for the default 10 s), at least 250 ms, so four heartbeats in a row may be late
 * before JetStream redelivers.
 */
export function heartbeatIntervalMs(ackWaitMs: number): number {
  return Math.max(250, Math.floor(ackWaitMs / 5));
}

/**
 * How long one pull request of an idle worker slot waits for a message (ms): the longest a
 * consumer's `stop()` waits for its idle slots, and the longest a killed worker's pull requests stay
 * open at the server. nats-server 2.9 may pick such a dead request for a redelivery; the delivery
 * fails and that message waits one more ack wait, and may later come twice at once
 * (nats-server#5305, #5338; README "Crash recovery"). 1 s, the least nats.js accepts, keeps that
 * window short (four kills in 10 s: the longest ingestion takeover 20.0 s with 3 s, 11.0 s with 1 s)
 * for one pull a second per idle slot.
 */
const PULL_EXPIRES_MS = 1000;

/** What a handler learns about the delivery it is processing. */
export interface Delivery {
  /** 1-based delivery attempt. */
  attempt: number;
  maxDeliver: number;
  isLastAttempt: boolean;
  /**
   * Frees this delivery's consumer slot, so that the slot pulls the next message while the handler
   * goes on; the delivery stays live (heartbeated) and is acknowledged, or nak'ed, when the handler
   * settles, as before. For a handler whose remaining work waits on a limit of its own (ingestion's
   * enrichment after `ready`): the documents behind it are extracted meanwhile. Deliveries in
   * progress stay bounded by the consumer's `max_ack_pending`. Calling it again does nothing;
   * absent where no consumer slot runs the handler (direct calls).
   */
  releaseSlot?: () => void;
}

export interface ConsumerOptions<T> {
  stream: string;
  durable: string;
  filterSubject: string;
  /**
   * How long JetStream waits for an ack or a heartbeat before redelivering (ms); heartbeats extend it
   * while work runs. Default {@link JETSTREAM_ACK_WAIT_MS}.
   */
  ackWaitMs?: number;
  /** Deliveries before JetStream gives up on a message. */
  maxDeliver: number;
  /** Messages processed at once by this process. */
  concurrency: number;
  /**
   * Messages delivered and not yet acknowledged across EVERY process of this durable consumer
   * (JetStream `max_ack_pending`); default max(concurrency × 4, 16). 1 makes the consumer strictly
   * ordered over all replicas (the webhooks fan-out).
   */
  maxAckPending?: number;
  /** Delay before a failed message is redelivered (ms), multiplied by the attempt number. */
  retryDelayMs?: number;
  logger: Logger;
  /** Resolves: ack. Rejects: nak with backoff (redelivered until maxDeliver). */
  handler: (payload: T, delivery: Delivery) => Promise<void>;
  /**
   * The unit of work a message asks for (a document id, say), or null for none. Deliveries with
   * one key never run the handler at once in this process: a delivery whose key is in progress
   * (a redelivery of the same stream message, or a second message for the same work) waits,
   * heartbeated, until that run settles. Then it is acknowledged without running the handler when
   * the run succeeded and the waiting message is not newer than the one that ran (stream sequence
   * at most the run's: the same request, already done); otherwise (the run failed, or the waiting
   * message is a later request) its handler runs, after the first. Each process guards only its
   * own deliveries: across replicas the ack wait and heartbeats keep one delivery live.
   * Default: no key, deliveries run independently.
   */
  singleFlightKey?: (payload: T) => string | null;
}

/** A handler run of {@link runConsumer} for one single-flight key. */
interface Flight {
  /** Stream sequence of the message being handled. */
  streamSequence: number;
  /** Resolves when the run settles: true when the handler succeeded (the message was acknowledged). */
  settled: Promise<boolean>;
}

/**
 * Runs a durable JetStream pull consumer with explicit acks, bounded concurrency, progress
 * heartbeats (`working()`) while a handler runs, and backoff on failure. At-least-once: handlers
 * must be idempotent. Each message is handled inside a CONSUMER span continuing the publisher's
 * trace (headers), and counted in the metrics of @kb/telemetry (outcome, duration, queue depth).
 *
 * Each of the `concurrency` slots pulls one message when it is free, so nothing waits unheartbeated
 * in a client buffer and an idle replica can take any pending message. Log lines of a handler carry
 * `consumer`, `stream_seq` and `delivery_seq` (see RequestContext.delivery). With
 * `singleFlightKey`, a second delivery of work in progress in this process waits for it instead of
 * running beside it (nats-server 2.9 can deliver one message twice at once: README "Crash recovery").
 * A handler may free its slot before it settles (`Delivery.releaseSlot`): the slot then pulls the
 * next message while that delivery, still heartbeated, finishes beside it.
 * @returns `stop()`, which stops pulling and waits for in-flight handlers, released ones included
 *   (and at most PULL_EXPIRES_MS for idle pulls).
 */
export async function runConsumer<T>(nc: NatsConnection, options: ConsumerOptions<T>): Promise<{ stop: () => Promise<void> }> {
  const jsm = await nc.jetstreamManager();
  const ackWaitMs = options.ackWaitMs ?? JETSTREAM_ACK_WAIT_MS;
  const config = {
    durable_name: options.durable,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    ack_wait: nanos(ackWaitMs),
    max_deliver: options.maxDeliver,
    filter_subject: options.filterSubject,
    max_ack_pending: options.maxAckPending ?? Math.max(options.concurrency * 4, 16),
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
  let stopping = false;

  // A message is pulled only when a slot is free (one `next()` per idle slot), and heartbeated from
  // the moment it arrives until it is acknowledged. A client-side buffer (`consume()` prefetches up
  // to a batch) would hold messages no handler has started and none heartbeats: past `ack_wait`
  // JetStream redelivers them while the first copy still waits, and both get processed. One timer
  // heartbeats every live delivery and watches for a blocked event loop: a late tick means every
  // delivery of this process went that long without a heartbeat.
  const live = new Set<JsMsg>();
  /** Runs in progress per single-flight key (options.singleFlightKey). */
  const flights = new Map<string, Flight>();
  const interval = heartbeatIntervalMs(ackWaitMs);
  let lastTick = Date.now();
  const heartbeat = setInterval(() => {
    const now = Date.now();
    const gap = now - lastTick;
    lastTick = now;
    for (const msg of live) {
      try {
        msg.working();
      } catch {
        // The connection is closed (shutdown): nothing to extend; JetStream redelivers if needed.
      }
    }
    if (live.size > 0 && gap > ackWaitMs / 2) {
      options.logger.warn(
        { consumer: options.durable, gap_ms: gap, ack_wait_ms: ackWaitMs, in_flight: live.size },
        'heartbeat late: the event loop was blocked; past the ack wait, JetStream hands the work to another worker',
      );
    }
  }, interval);
  /** Handler runs not settled yet, released ones (Delivery.releaseSlot) included; stop() waits for them. */
  const running = new Set<Promise<void>>();
  const handle = async (msg: JsMsg, releaseSlot: () => void) => {
    const attempt = msg.info.redeliveryCount;
    const requestId = msg.headers?.get(REQUEST_ID_METADATA_KEY) || randomUUID();
    const deliveryLog = { consumer: options.durable, streamSequence: msg.info.streamSequence, deliverySequence: msg.info.deliverySequence };
    const stopTimer = metrics.natsHandlerDuration.startTimer({ consumer: options.durable }); // [telemetry]
    try {
      // [telemetry] continue the publisher's trace (traceparent header) in a CONSUMER span
      await withConsumerSpan(msg.subject, msg.headers, { 'messaging.consumer.group.name': options.durable, 'messaging.delivery_count': attempt }, async () => {
        try {
          const payload = JSON.parse(Buffer.from(msg.data).toString('utf8')) as T;
          const key = options.singleFlightKey?.(payload) ?? null;
          if (key !== null && flights.has(key)) {
            // The same work is in progress here: wait for it (this delivery stays live, heartbeated).
            let ran: Flight | undefined;
            let ok = false;
            const log = (msgText: string, extra: object = {}) =>
              runWithContext({ requestId, delivery: deliveryLog }, () =>
                options.logger.info({ key, attempt, stream_seq: msg.info.streamSequence, running_stream_seq: ran?.streamSequence, ...extra }, msgText),
              );
            for (let f = flights.get(key); f; f = flights.get(key)) {
              ran = f;
              log('duplicate delivery: waiting for the run of the same work in progress');
              ok = await f.settled;
            }
            // No await from here to the flight's registration below: a third waiter sees it.
            if (ok && msg.info.streamSequence <= ran!.streamSequence) {
              log('duplicate delivery acknowledged: the same work already succeeded');
              msg.ack();
              metrics.natsMessages.inc({ consumer: options.durable, outcome: 'ack' }); // [telemetry]
              return;
            }
          }
          let settle: (ok: boolean) => void = () => undefined;
          if (key !== null) {
            const settled = new Promise<boolean>((r) => (settle = r));
            flights.set(key, { streamSequence: msg.info.streamSequence, settled });
          }
          let ok = false;
          try {
            await runWithContext({ requestId, delivery: deliveryLog }, () =>
              options.handler(payload, { attempt, maxDeliver: options.maxDeliver, isLastAttempt: attempt >= options.maxDeliver, releaseSlot }),
            );
            ok = true;
          } finally {
            if (key !== null) {
              flights.delete(key);
              settle(ok);
            }
          }
          msg.ack();
          metrics.natsMessages.inc({ consumer: options.durable, outcome: 'ack' }); // [telemetry]
        } catch (error) {
          runWithContext({ requestId, delivery: deliveryLog }, () =>
            options.logger.warn({ err: error, subject: msg.subject, attempt }, 'event handler failed; will retry'),
          );
          if (stopping) msg.nak();
          else msg.nak((options.retryDelayMs ?? 2000) * attempt);
          metrics.natsMessages.inc({ consumer: options.durable, outcome: 'nak' }); // [telemetry]
        }
      });
    } finally {
      stopTimer();
      live.delete(msg);
    }
  };

  const slot = async () => {
    while (!stopping && !nc.isClosed()) {
      let msg: JsMsg | null;
      try {
        msg = await consumer.next({ expires: PULL_EXPIRES_MS });
      } catch (error) {
        if (stopping || nc.isClosed()) break;
        options.logger.warn({ err: error, consumer: options.durable }, 'pulling a message failed; retrying');
        await new Promise((r) => setTimeout(r, 1000));
        continue;
      }
      if (!msg) continue;
      if (stopping) {
        msg.nak(); // arrived during shutdown: back to the stream at once for another worker
        break;
      }
      live.add(msg);
      let releaseSlot!: () => void;
      const slotReleased = new Promise<void>((resolve) => (releaseSlot = resolve));
      const run = handle(msg, releaseSlot).catch((error) =>
        options.logger.error({ err: error, consumer: options.durable }, 'message handling failed outside the handler'),
      );
      running.add(run);
      void run.finally(() => running.delete(run));
      // The slot is busy until the run settles or its handler releases it; a released run goes on
      // beside the slot's next message, and stop() waits for it.
      await Promise.race([run, slotReleased]);
    }
  };
  const slots = Array.from({ length: Math.max(1, options.concurrency) }, () => slot());

  return {
    stop: async () => {
      stopping = true;
      unregisterLag(); // [telemetry]
      await Promise.allSettled(slots);
      await Promise.allSettled([...running]);
      clearInterval(heartbeat);
    },
  };
}

export type { NatsConnection };

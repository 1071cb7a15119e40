import { AsyncLocalStorage } from 'node:async_hooks';
import pino, { Logger } from 'pino';
import { traceLogFields } from '@kb/telemetry'; // [telemetry] trace ids in log lines
import { loadConfig } from './config';
import { sharedEnv } from './service-env';

/** Per-call context carried through every service call and log line. */
export interface RequestContext {
  requestId: string;
  orgId?: string;
  /**
   * The JetStream delivery being handled (set by runConsumer), logged as `consumer`, `stream_seq`
   * (the stream message: two deliveries with one `stream_seq` are the same message) and
   * `delivery_seq` (the consumer's delivery counter, new on every delivery and redelivery).
   */
  delivery?: { consumer: string; streamSequence: number; deliverySequence: number };
}

const storage = new AsyncLocalStorage<RequestContext>();

/** Runs `fn` with `ctx` as the current request context (read by logs and outgoing gRPC calls). */
export function runWithContext<T>(ctx: RequestContext, fn: () => T): T {
  return storage.run(ctx, fn);
}

/** The current request context, if any. */
export function currentContext(): RequestContext | undefined {
  return storage.getStore();
}

/** Options of createLogger. */
export interface LoggerOptions {
  /**
   * Write lines in blocks of up to 4 KiB, flushed at least every 100 ms and on exit, instead of
   * one write per line. For a process that logs every request (the gateway's access log): each
   * write is a system call, and on a busy machine a point where the process loses its CPU.
   * A SIGKILL loses the unflushed lines (at most 100 ms of them).
   */
  buffered?: boolean;
}

/** Largest block of log lines written at once by a buffered logger (bytes). */
const LOG_BLOCK_BYTES = 4096;
/** Longest time a line waits in a buffered logger (ms). */
const LOG_FLUSH_MS = 100;

/**
 * Structured JSON logger (pino) for one service. Every line carries `service` and, inside a
 * request, `request_id` and `org_id`; inside a JetStream delivery `consumer`, `stream_seq` and
 * `delivery_seq` (see {@link RequestContext});  inside a trace (OpenTelemetry, see @kb/telemetry) `trace_id` and
 * `span_id`. Level from LOG_LEVEL (sharedEnv.logging, validated by loadConfig; default info).
 * @throws Error ("Invalid configuration") when LOG_LEVEL is not one of pino's levels.
 */
export function createLogger(service: string, options: LoggerOptions = {}): Logger {
  // Synchronous writes by default: a fatal line written just before process.exit is never lost.
  // Buffered: pino flushes the buffer synchronously on exit as well.
  const destination = options.buffered ? pino.destination({ dest: 1, sync: false, minLength: LOG_BLOCK_BYTES }) : pino.destination({ dest: 1, sync: true });
  if (options.buffered) setInterval(() => destination.flush(), LOG_FLUSH_MS).unref();
  return pino(
    {
      level: loadConfig(sharedEnv.logging).LOG_LEVEL,
      base: { service },
      timestamp: pino.stdTimeFunctions.isoTime,
      mixin() {
        const ctx = storage.getStore();
        const ids = ctx ? { request_id: ctx.requestId, org_id: ctx.orgId } : {};
        const d = ctx?.delivery;
        if (d) Object.assign(ids, { consumer: d.consumer, stream_seq: d.streamSequence, delivery_seq: d.deliverySequence });
        return { ...ids, ...traceLogFields() }; // [telemetry]
      },
    },
    destination,
  );
}

export type { Logger };

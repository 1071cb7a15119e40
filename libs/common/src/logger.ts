import { AsyncLocalStorage } from 'node:async_hooks';
import pino, { Logger } from 'pino';
import { traceLogFields } from '@kb/telemetry'; // [telemetry] trace ids in log lines

/** Per-call context carried through every service call and log line. */
export interface RequestContext {
  requestId: string;
  orgId?: string;
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

/**
 * Structured JSON logger (pino) for one service. Every line carries `service` and, inside a
 * request, `request_id` and `org_id`; inside a trace (OpenTelemetry, see @kb/telemetry) `trace_id` and
 * `span_id`. Level from LOG_LEVEL (default info).
 */
export function createLogger(service: string): Logger {
  // Synchronous writes: a fatal line written just before process.exit is never lost.
  return pino(
    {
    level: process.env.LOG_LEVEL ?? 'info',
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
    mixin() {
      const ctx = storage.getStore();
      const ids = ctx ? { request_id: ctx.requestId, org_id: ctx.orgId } : {};
      return { ...ids, ...traceLogFields() }; // [telemetry]
    },
    },
    pino.destination({ dest: 1, sync: true }),
  );
}

export type { Logger };

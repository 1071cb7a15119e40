import { context, propagation, ROOT_CONTEXT, Span, SpanKind, SpanStatusCode, trace, type Context } from '@opentelemetry/api';

// The SDK packages are loaded by startTracing only: processes that never start tracing (kbctl,
// unit tests) and the log/propagation helpers below need nothing but @opentelemetry/api.
/* eslint-disable @typescript-eslint/no-require-imports */
function loadSdk() {
  return {
    ...(require('@opentelemetry/context-async-hooks') as typeof import('@opentelemetry/context-async-hooks')),
    ...(require('@opentelemetry/core') as typeof import('@opentelemetry/core')),
    ...(require('@opentelemetry/exporter-trace-otlp-proto') as typeof import('@opentelemetry/exporter-trace-otlp-proto')),
    ...(require('@opentelemetry/instrumentation') as typeof import('@opentelemetry/instrumentation')),
    ...(require('@opentelemetry/instrumentation-grpc') as typeof import('@opentelemetry/instrumentation-grpc')),
    ...(require('@opentelemetry/instrumentation-http') as typeof import('@opentelemetry/instrumentation-http')),
    ...(require('@opentelemetry/resources') as typeof import('@opentelemetry/resources')),
    ...(require('@opentelemetry/sdk-trace') as typeof import('@opentelemetry/sdk-trace')),
    ...(require('@opentelemetry/semantic-conventions') as typeof import('@opentelemetry/semantic-conventions')),
  };
}

type Sdk = ReturnType<typeof loadSdk>;
type SdkSampler = import('@opentelemetry/sdk-trace').Sampler;

/**
 * The sampler named by OTEL_TRACES_SAMPLER / OTEL_TRACES_SAMPLER_ARG, as the OpenTelemetry
 * specification defines them ("General SDK Configuration", Environment Variable Specification):
 * `always_on`, `always_off`, `traceidratio`, `parentbased_always_on` (the default),
 * `parentbased_always_off`, `parentbased_traceidratio`; the ratio argument is a number in [0, 1],
 * default 1. OpenTelemetry JS 3 moved this reading out of the trace SDK into `@opentelemetry/sdk-node`,
 * which this process does not use (it sets up tracing only), so it is done here.
 *
 * @throws Error naming the variable for an unknown sampler or a ratio outside [0, 1] (the process
 *   then refuses to start, like any other invalid setting).
 */
export function samplerFromEnv(
  env: NodeJS.ProcessEnv,
  sdk: Pick<Sdk, 'AlwaysOffSampler' | 'AlwaysOnSampler' | 'ParentBasedSampler' | 'TraceIdRatioBasedSampler'> = loadSdk(),
): SdkSampler {
  const name = (env.OTEL_TRACES_SAMPLER ?? '').trim().toLowerCase() || 'parentbased_always_on';
  const ratio = () => {
    const raw = (env.OTEL_TRACES_SAMPLER_ARG ?? '').trim();
    const value = raw === '' ? 1 : Number(raw);
    if (!Number.isFinite(value) || value < 0 || value > 1) throw new Error(`OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1 for ${name}, got "${raw}"`);
    return value;
  };
  switch (name) {
    case 'always_on':
      return new sdk.AlwaysOnSampler();
    case 'always_off':
      return new sdk.AlwaysOffSampler();
    case 'traceidratio':
      return new sdk.TraceIdRatioBasedSampler(ratio());
    case 'parentbased_always_on':
      return new sdk.ParentBasedSampler({ root: new sdk.AlwaysOnSampler() });
    case 'parentbased_always_off':
      return new sdk.ParentBasedSampler({ root: new sdk.AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new sdk.ParentBasedSampler({ root: new sdk.TraceIdRatioBasedSampler(ratio()) });
    default:
      throw new Error(
        `OTEL_TRACES_SAMPLER "${name}" is not supported: use always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio`,
      );
  }
}

/**
 * Batch span processor options from the specification's OTEL_BSP_SCHEDULE_DELAY (ms),
 * OTEL_BSP_EXPORT_TIMEOUT (ms), OTEL_BSP_MAX_QUEUE_SIZE and OTEL_BSP_MAX_EXPORT_BATCH_SIZE (spans);
 * unset or non-numeric values keep the SDK's defaults (5000 ms, 30000 ms, 2048, 512). OpenTelemetry
 * JS 3's trace SDK no longer reads them itself.
 */
export function batchOptionsFromEnv<E>(
  env: NodeJS.ProcessEnv,
  exporter: E,
): { exporter: E; scheduledDelayMillis?: number; exportTimeoutMillis?: number; maxQueueSize?: number; maxExportBatchSize?: number } {
  const num = (name: string) => {
    const raw = (env[name] ?? '').trim();
    const value = Number(raw);
    return raw !== '' && Number.isFinite(value) && value >= 0 ? value : undefined;
  };
  return {
    exporter,
    scheduledDelayMillis: num('OTEL_BSP_SCHEDULE_DELAY'),
    exportTimeoutMillis: num('OTEL_BSP_EXPORT_TIMEOUT'),
    maxQueueSize: num('OTEL_BSP_MAX_QUEUE_SIZE'),
    maxExportBatchSize: num('OTEL_BSP_MAX_EXPORT_BATCH_SIZE'),
  };
}

/** Name of the tracer every kb-platform span is created with. */
export const TRACER_NAME = 'kb-platform';

export interface TracingState {
  /** The service name on every span (`service.name`). */
  serviceName: string;
  /** True when spans are exported by OTLP (OTEL_EXPORTER_OTLP_ENDPOINT or ..._TRACES_ENDPOINT set). */
  exporting: boolean;
  /** Flushes buffered spans and stops the exporter (no-op without one). */
  shutdown: () => Promise<void>;
}

let state: TracingState | undefined;

/**
 * Starts OpenTelemetry tracing for this process: W3C trace-context propagation, the async-hooks
 * context manager, and auto-instrumentation of Node's outgoing `http` calls (S3, model providers) and `@grpc/grpc-js` (client and server, so `traceparent` travels in gRPC
 * metadata). NATS has no instrumentation: `withProducerSpan`/`withConsumerSpan` carry the
 * context in message headers.
 *
 * Must run before `@grpc/grpc-js` or `http` are first required (see `register.ts`).
 *
 * - Export: OTLP over HTTP/protobuf when OTEL_EXPORTER_OTLP_ENDPOINT (or
 *   OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set; sampler then from OTEL_TRACES_SAMPLER (default
 *   parent-based always-on). Without an endpoint nothing is recorded or exported: root spans are
 *   not sampled, so spans are non-recording and only their ids (trace context) are created and
 *   propagated, which is what the logs' `trace_id`/`span_id` need.
 * - OTEL_SDK_DISABLED=true turns everything off (no propagation, no trace ids in logs).
 * - `options.propagation: 'explicit'` (the gateway): no context manager and no instrumentation.
 *   The process creates its spans with explicit parents (startHttpServerSpan) and writes
 *   `traceparent` into its outgoing calls itself (traceHeaders). On Node 20 the async-hooks context
 *   manager enables a promise hook for every promise of the process, and the HTTP instrumentation
 *   binds every request/response listener: together more than half of the gateway's CPU time per
 *   request (docs/gateway.md "Benchmark").
 * Standard variables (OTEL_SERVICE_NAME, OTEL_EXPORTER_OTLP_HEADERS, OTEL_RESOURCE_ATTRIBUTES...)
 * are honoured by the SDK. Idempotent: a second call returns the first state.
 */
export function startTracing(serviceName: string, env: NodeJS.ProcessEnv = process.env, options: { propagation?: 'context' | 'explicit' } = {}): TracingState {
  if (state) return state;
  if (/^(true|1)$/i.test(env.OTEL_SDK_DISABLED ?? '')) {
    state = { serviceName, exporting: false, shutdown: async () => undefined };
    return state;
  }
  const sdk = loadSdk();
  const {
    ATTR_SERVICE_NAME,
    ATTR_SERVICE_VERSION,
    AlwaysOffSampler,
    AsyncLocalStorageContextManager,
    BatchSpanProcessor,
    CompositePropagator,
    defaultResource,
    detectResources,
    envDetector,
    GrpcInstrumentation,
    HttpInstrumentation,
    OTLPTraceExporter,
    ParentBasedSampler,
    registerInstrumentations,
    resourceFromAttributes,
    TracerProvider,
    W3CBaggagePropagator,
    W3CTraceContextPropagator,
  } = sdk;
  const exporting = Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
  const provider = new TracerProvider({
    // SDK defaults, then OTEL_RESOURCE_ATTRIBUTES / OTEL_SERVICE_NAME, then ours (the service name
    // still prefers OTEL_SERVICE_NAME).
    resource: defaultResource()
      .merge(detectResources({ detectors: [envDetector] }))
      .merge(
        resourceFromAttributes({
          [ATTR_SERVICE_NAME]: env.OTEL_SERVICE_NAME || serviceName,
          [ATTR_SERVICE_VERSION]: env.KB_VERSION || 'dev',
        }),
      ),
    // Without an exporter, recording spans would only cost CPU: ids are still generated.
    sampler: exporting ? samplerFromEnv(env, sdk) : new ParentBasedSampler({ root: new AlwaysOffSampler() }),
    spanProcessors: exporting ? [new BatchSpanProcessor(batchOptionsFromEnv(env, new OTLPTraceExporter()))] : [],
  });
  const explicit = options.propagation === 'explicit';
  // What NodeTracerProvider.register() did before OpenTelemetry JS 3: the global provider, the
  // propagator, and (unless explicit) the AsyncLocalStorage context manager.
  trace.setGlobalTracerProvider(provider);
  propagation.setGlobalPropagator(new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] }));
  if (!explicit) context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  if (!explicit)
    registerInstrumentations({
      tracerProvider: provider,
      instrumentations: [
        // Outgoing calls only (S3, model providers). Inbound requests are traced by the gateway's
        // Fastify hooks (startHttpServerSpan): the instrumentation's inbound path binds every
        // request/response listener to the context and computed its attributes even for ignored
        // routes, which cost more than half of a request's CPU time (docs/gateway.md "Benchmark").
        new HttpInstrumentation({ disableIncomingRequestInstrumentation: true }),
        new GrpcInstrumentation({
          // The standard health service (probes every few seconds).
          ignoreGrpcMethods: [(name: string) => name === 'Check' || name === 'Watch'],
        }),
      ],
    });
  state = { serviceName, exporting, shutdown: () => provider.shutdown() };
  return state;
}

/** The tracing state of this process, if `startTracing` ran. */
export function tracingState(): TracingState | undefined {
  return state;
}

/**
 * `trace_id` and `span_id` (lowercase hex, W3C) of the active span, for log lines; `{}` outside
 * any trace or when tracing is off.
 */
export function traceLogFields(ctx: Context = context.active()): { trace_id?: string; span_id?: string } {
  const sc = trace.getSpanContext(ctx);
  if (!sc || !trace.isSpanContextValid(sc)) return {};
  return { trace_id: sc.traceId, span_id: sc.spanId };
}

/** Minimal header map of a message (NATS `MsgHdrs` fits: `get`/`set` of string values). */
export interface MessageHeaders {
  get(key: string): string;
  set(key: string, value: string): void;
}

/**
 * Runs `fn` inside a PRODUCER span named `<subject> publish` and writes the span's W3C
 * `traceparent` (and `tracestate`/`baggage`) into `headers` before `fn` sends the message.
 * Attributes follow the OpenTelemetry messaging semantic conventions (`messaging.system=nats`).
 */
export async function withProducerSpan<T>(subject: string, headers: MessageHeaders, fn: () => Promise<T>): Promise<T> {
  const tracer = trace.getTracer(TRACER_NAME);
  return tracer.startActiveSpan(
    `${subject} publish`,
    { kind: SpanKind.PRODUCER, attributes: { 'messaging.system': 'nats', 'messaging.destination.name': subject, 'messaging.operation.type': 'publish' } },
    async (span) => {
      propagation.inject(context.active(), headers, { set: (h, k, v) => h.set(k, v) });
      return endSpan(span, fn);
    },
  );
}

/**
 * Runs `fn` inside a CONSUMER span named `<subject> process`, child of the context extracted from
 * the message's headers (the publisher's span), so one trace spans gateway -> gRPC -> NATS ->
 * consumer. A message without trace headers starts a new trace.
 */
export async function withConsumerSpan<T>(
  subject: string,
  headers: MessageHeaders | undefined,
  attributes: Record<string, string | number>,
  fn: () => Promise<T>,
): Promise<T> {
  const parent = headers ? propagation.extract(context.active(), headers, { get: (h, k) => h.get(k) || undefined, keys: () => [] }) : context.active();
  const tracer = trace.getTracer(TRACER_NAME);
  return tracer.startActiveSpan(
    `${subject} process`,
    {
      kind: SpanKind.CONSUMER,
      attributes: { 'messaging.system': 'nats', 'messaging.destination.name': subject, 'messaging.operation.type': 'process', ...attributes },
    },
    parent,
    (span) => endSpan(span, fn),
  );
}

async function endSpan<T>(span: Span, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    span.recordException(error as Error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error)?.message });
    throw error;
  } finally {
    span.end();
  }
}

/** Header map of an inbound HTTP request (Node's IncomingHttpHeaders fits). */
export type HttpHeaders = Record<string, string | string[] | undefined>;

const headerGetter = {
  get: (h: HttpHeaders, k: string) => h[k],
  keys: (h: HttpHeaders) => Object.keys(h),
};

/**
 * Starts the SERVER span of an inbound HTTP request, child of the caller's W3C `traceparent` when
 * the request carries one (a new trace otherwise). Named `<METHOD> <route>` with the stable HTTP
 * semantic-convention attributes (`http.request.method`, `http.route`, `url.path`). Without an
 * exporter the span is non-recording: only its ids exist, for logs and propagation. The parent is
 * explicit (never the active context): pass `traceHeaders(span)` to outgoing calls, then call
 * `endHttpServerSpan`.
 * @param route the route template (`/api/v2/projects/:id`), or the path when no route matched.
 */
export function startHttpServerSpan(method: string, route: string, path: string, headers: HttpHeaders): Span {
  return trace
    .getTracer(TRACER_NAME)
    .startSpan(
      `${method} ${route}`,
      { kind: SpanKind.SERVER, attributes: { 'http.request.method': method, 'http.route': route, 'url.path': path } },
      propagation.extract(ROOT_CONTEXT, headers, headerGetter),
    );
}

/** Ends a span from startHttpServerSpan with the response status (5xx → span status ERROR). */
export function endHttpServerSpan(span: Span, statusCode: number): void {
  span.setAttribute('http.response.status_code', statusCode);
  if (statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}

/**
 * The W3C trace-context headers (`traceparent`, and `tracestate`/`baggage` when present) of `span`,
 * for a process that propagates explicitly (gRPC metadata, message headers).
 * @returns `{}` when tracing is off (the span's context is invalid).
 */
export function traceHeaders(span: Span): Record<string, string> {
  const carrier: Record<string, string> = {};
  if (trace.isSpanContextValid(span.spanContext())) propagation.inject(trace.setSpan(ROOT_CONTEXT, span), carrier);
  return carrier;
}

import http from 'node:http';
import { AddressInfo } from 'node:net';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/**
 * The process's Prometheus registry (prom-client). Every kb-platform metric lives here; the
 * metrics server of `startMetricsServer` exposes it at `GET /metrics` (text format 0.0.4).
 * Default labels: `service` (set by `startMetricsServer`).
 */
export const registry = new Registry();

/** Latency buckets (seconds) for requests and RPCs: 5 ms to 5 min (verify/chat can take minutes). */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

interface ConsumerSource {
  stream: string;
  consumer: string;
  read: () => Promise<{ pending: number; ackPending: number }>;
}
const consumerSources = new Map<string, ConsumerSource>();

/** Reads every registered JetStream consumer (one `consumer info` request each, per gauge and scrape). */
async function readConsumers(): Promise<Array<ConsumerSource & { pending: number; ackPending: number }>> {
  const out = [];
  for (const s of consumerSources.values()) {
    try {
      out.push({ ...s, ...(await s.read()) });
    } catch {
      // NATS unreachable during this scrape: the series is absent rather than a stale value.
    }
  }
  return out;
}

/**
 * The platform's metrics. Names follow Prometheus conventions (`_total` counters, `_seconds`
 * histograms); HTTP/gRPC ones follow the OpenTelemetry/grpc-ecosystem names operators already
 * chart. Services increment them; `startMetricsServer` serves them.
 */
export const metrics = {
  /** Gateway: HTTP requests by method, route template and status code. */
  httpRequests: new Counter({
    name: 'http_server_requests_total',
    help: 'HTTP requests handled by the gateway.',
    labelNames: ['method', 'route', 'status_code'] as const,
    registers: [registry],
  }),
  httpDuration: new Histogram({
    name: 'http_server_request_duration_seconds',
    help: 'HTTP request latency at the gateway (seconds).',
    labelNames: ['method', 'route', 'status_code'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  }),
  /** gRPC servers: unary calls by service, method and status code name (OK, NOT_FOUND, ...). */
  grpcHandled: new Counter({
    name: 'grpc_server_handled_total',
    help: 'gRPC calls completed by this service.',
    labelNames: ['grpc_service', 'grpc_method', 'grpc_code'] as const,
    registers: [registry],
  }),
  grpcDuration: new Histogram({
    name: 'grpc_server_handling_seconds',
    help: 'gRPC call latency (seconds).',
    labelNames: ['grpc_service', 'grpc_method', 'grpc_code'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  }),
  /** JetStream consumers: messages handled by outcome (`ack`: done, `nak`: redelivered later). */
  natsMessages: new Counter({
    name: 'kb_nats_messages_processed_total',
    help: 'JetStream messages handled by this process.',
    labelNames: ['consumer', 'outcome'] as const,
    registers: [registry],
  }),
  natsHandlerDuration: new Histogram({
    name: 'kb_nats_message_handling_seconds',
    help: 'Time to handle one JetStream message (seconds).',
    labelNames: ['consumer'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  }),
  /** Queue depth: messages not yet delivered to the durable consumer (JetStream `num_pending`). */
  natsPending: new Gauge({
    name: 'kb_nats_consumer_pending_messages',
    help: 'Messages waiting in the stream for this durable consumer (queue depth; ingestion = documents waiting).',
    labelNames: ['stream', 'consumer'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      for (const s of await readConsumers()) this.set({ stream: s.stream, consumer: s.consumer }, s.pending);
    },
  }),
  /** Delivered but not yet acknowledged (being processed, or waiting for redelivery). */
  natsAckPending: new Gauge({
    name: 'kb_nats_consumer_ack_pending_messages',
    help: 'Messages delivered to this durable consumer and not yet acknowledged.',
    labelNames: ['stream', 'consumer'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      for (const s of await readConsumers()) this.set({ stream: s.stream, consumer: s.consumer }, s.ackPending);
    },
  }),
  /** Ingestion: pages extracted from completed documents (rate() = pages/s). */
  ingestionPages: new Counter({ name: 'kb_ingestion_pages_total', help: 'Pages extracted from documents that completed processing.', registers: [registry] }),
  /** Ingestion: documents finished, by outcome (`completed`, `failed`). */
  ingestionDocuments: new Counter({
    name: 'kb_ingestion_documents_total',
    help: 'Documents finished by ingestion, by outcome.',
    labelNames: ['outcome'] as const,
    registers: [registry],
  }),
  /** Check: single verifications (POST /check/verify) by verdict. */
  checkVerifications: new Counter({
    name: 'kb_check_verifications_total',
    help: 'Requirements verified on demand, by verdict.',
    labelNames: ['verdict'] as const,
    registers: [registry],
  }),
  /** Check runs: requirements evaluated by run workers, by verdict (rate() = check-run throughput). */
  checkRequirementsEvaluated: new Counter({
    name: 'kb_check_run_requirements_evaluated_total',
    help: 'Requirements evaluated by check-run workers, by verdict.',
    labelNames: ['verdict'] as const,
    registers: [registry],
  }),
  /** Check runs finished, by final status (`completed`, `failed`, `stopped`). */
  checkRuns: new Counter({
    name: 'kb_check_runs_total',
    help: 'Check runs finished, by final status.',
    labelNames: ['status'] as const,
    registers: [registry],
  }),
  /** Model tokens by model and kind (`prompt`, `completion`); `embedded` = the built-in extractive model. */
  modelTokens: new Counter({
    name: 'kb_model_tokens_total',
    help: 'Tokens read (prompt) and written (completion) by chat and embedding models.',
    labelNames: ['model', 'kind'] as const,
    registers: [registry],
  }),
  /** Webhook delivery attempts by outcome (`succeeded`, `retry`, `failed`: the last after the retry window). */
  webhookAttempts: new Counter({
    name: 'kb_webhook_attempts_total',
    help: 'Webhook delivery attempts, by outcome.',
    labelNames: ['outcome'] as const,
    registers: [registry],
  }),
  /** Seconds from a state change (the event's created_at) to its successful delivery. */
  webhookDeliveryDelay: new Histogram({
    name: 'kb_webhook_delivery_delay_seconds',
    help: 'Time from a state change to its successful webhook delivery (seconds).',
    buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600, 86400],
    registers: [registry],
  }),
};

/**
 * Records one finished gRPC unary call. `path` is the full method path
 * (`/kb.documents.v1.DocumentsService/GetProject`); `code` the status name (`OK`, `NOT_FOUND`...).
 */
export function observeGrpcCall(path: string, code: string, seconds: number): void {
  const slash = path.lastIndexOf('/');
  const labels = { grpc_service: path.slice(1, slash), grpc_method: path.slice(slash + 1), grpc_code: code };
  metrics.grpcHandled.inc(labels);
  metrics.grpcDuration.observe(labels, seconds);
}

/** Label-bound children of the HTTP series, by `method route status` (bounded like the labels). */
const httpChildren = new Map<string, { requests: { inc(): void }; duration: { observe(v: number): void } }>();

/**
 * Records one HTTP request at the gateway; `route` must be the route template (bounded
 * cardinality). The label-bound children are looked up once per label set and kept: prom-client
 * would otherwise hash the label object on every call (the gateway calls this per request).
 */
export function observeHttpRequest(method: string, route: string, statusCode: number, seconds: number): void {
  const key = `${method} ${route} ${statusCode}`;
  let child = httpChildren.get(key);
  if (!child) {
    const labels = { method, route, status_code: String(statusCode) };
    child = { requests: metrics.httpRequests.labels(labels), duration: metrics.httpDuration.labels(labels) };
    httpChildren.set(key, child);
  }
  child.requests.inc();
  child.duration.observe(seconds);
}

/** Adds token usage of one model call (`usage` as returned by the model port: prompt/completion tokens). */
export function recordModelTokens(model: string, usage: { promptTokens?: number; completionTokens?: number } | undefined): void {
  if (!usage) return;
  if (usage.promptTokens) metrics.modelTokens.inc({ model, kind: 'prompt' }, usage.promptTokens);
  if (usage.completionTokens) metrics.modelTokens.inc({ model, kind: 'completion' }, usage.completionTokens);
}

/**
 * Registers a JetStream durable consumer whose queue depth is read at every scrape
 * (`kb_nats_consumer_pending_messages`, `kb_nats_consumer_ack_pending_messages`).
 * @returns a function that unregisters it.
 */
export function registerConsumerLag(stream: string, consumer: string, read: ConsumerSource['read']): () => void {
  const key = `${stream}/${consumer}`;
  consumerSources.set(key, { stream, consumer, read });
  return () => consumerSources.delete(key);
}

let defaultsCollected = false;

export interface MetricsServerOptions {
  /** `service` label on every series. */
  service: string;
  host: string;
  /** TCP port; 0 = a free port (tests). */
  port: number;
  /** false: no server (the metrics are still counted, cheaply). */
  enabled?: boolean;
}

/**
 * Serves `GET /metrics` (Prometheus text format) on its own HTTP port, apart from any public
 * listener, plus Node process metrics (CPU, memory, event-loop lag, GC; prom-client defaults).
 * Any other path answers 404.
 *
 * @returns the bound port (null when disabled) and `close()`.
 * @throws the listen error (e.g. EADDRINUSE) so that a misconfigured port fails the start.
 */
export async function startMetricsServer(o: MetricsServerOptions): Promise<{ port: number | null; close: () => Promise<void> }> {
  if (o.enabled === false) return { port: null, close: async () => undefined };
  registry.setDefaultLabels({ service: o.service });
  if (!defaultsCollected) {
    collectDefaultMetrics({ register: registry });
    defaultsCollected = true;
  }
  const server = http.createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('Not found. Metrics are at /metrics.\n');
      return;
    }
    registry.metrics().then(
      (body) => res.writeHead(200, { 'Content-Type': registry.contentType }).end(body),
      (err: Error) => res.writeHead(500, { 'Content-Type': 'text/plain' }).end(`metrics collection failed: ${err.message}\n`),
    );
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    // A scrape in progress must not hold up the shutdown (idle keep-alive ones close anyway).
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

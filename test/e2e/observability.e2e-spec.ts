import { readFileSync } from 'node:fs';
import path from 'node:path';
import { api, corpusFile, newOrg, uploadFile, waitForDocument } from './support/harness';

jest.setTimeout(120_000);

/**
 * Observability through the real stack (separate processes, real nats-server and PostgreSQL):
 * one request's trace id (W3C trace context, OpenTelemetry) in the JSON logs of gateway ->
 * documents (gRPC) -> ingestion (NATS headers) -> documents again (status event), and the
 * Prometheus metrics of each service on its own /metrics port (never on the public port).
 * The stack runs without an OTLP collector, the default: ids are propagated, nothing is exported.
 */
const dataDir = () => process.env.KB_E2E_DATA_DIR!;

function logLines(service: string): Array<Record<string, any>> {
  return readFileSync(path.join(dataDir(), 'logs', `${service}.log`), 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => {
      try {
        return JSON.parse(l);
      } catch {
        return {};
      }
    });
}

/** The gateway's access-log line of a request (written just after the response is sent: polled). */
async function requestLine(requestId: string): Promise<Record<string, any> | undefined> {
  for (let i = 0; i < 40; i++) {
    const line = logLines('gateway').find((l) => l.request_id === requestId && l.msg === 'request');
    if (line) return line;
    await new Promise((r) => setTimeout(r, 50));
  }
  return undefined;
}

function metricsPort(service: string): number {
  const state = JSON.parse(readFileSync(path.join(dataDir(), 'stack.json'), 'utf8'));
  return state.ports.metrics[service];
}

async function scrape(service: string): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${metricsPort(service)}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toContain('text/plain');
  return res.text();
}

/** Value of the first sample of `name` whose labels include every `labels` pair (NaN if none). */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-zA-Z_:][\w:]*)(\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = Object.fromEntries([...(m[3] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(m[4]);
  }
  return NaN;
}

describe('observability', () => {
  let key: string;
  let documentId: string;
  let traceId: string;

  beforeAll(async () => {
    ({ key } = newOrg('observability'));
    documentId = await uploadFile(key, { path: corpusFile('pdf/dol_osha-101_injury_illness_incident_report.pdf') });
    const res = await api(key)
      .post('/api/v2/documents/process')
      .send({ document_ids: [documentId] });
    expect(res.status).toBe(200);
    const requestId = res.headers['x-request-id'];
    const doc = await waitForDocument(key, documentId);
    expect(doc.status).toBe('completed');
    const line = await requestLine(requestId);
    expect(line).toBeDefined();
    traceId = line!.trace_id;
  });

  it('gives the gateway request a W3C trace id and logs it with the request line', () => {
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(traceId).not.toBe('0'.repeat(32));
  });

  it('carries that trace id through gRPC into the documents service and through NATS into ingestion', () => {
    const ingestion = logLines('ingestion').filter((l) => l.trace_id === traceId);
    expect(ingestion.map((l) => l.msg)).toEqual(expect.arrayContaining(['processing document', 'document processed']));
    expect(ingestion.every((l) => l.document_id === documentId && /^[0-9a-f]{16}$/.test(l.span_id))).toBe(true);
    // ingestion's status events (NATS again) are handled by documents in the same trace
    const documents = logLines('documents').filter((l) => l.trace_id === traceId);
    expect(documents.filter((l) => l.msg === 'document status event').map((l) => l.status)).toEqual(expect.arrayContaining(['ready', 'completed']));
    // and nothing else shares it: a second request gets its own trace
    const other = logLines('gateway').filter((l) => l.msg === 'request' && l.trace_id === traceId);
    expect(other).toHaveLength(1);
  });

  it('continues a trace started by the client (traceparent header)', async () => {
    const clientTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
    const res = await api(key).get(`/api/v2/documents/${documentId}`).set('traceparent', `00-${clientTrace}-00f067aa0ba902b7-01`);
    expect(res.status).toBe(200);
    const line = await requestLine(res.headers['x-request-id']);
    expect(line?.trace_id).toBe(clientTrace);
  });

  it('serves Prometheus metrics per service on their own port, and not on the public gateway port', async () => {
    const gateway = await scrape('gateway');
    expect(sample(gateway, 'http_server_requests_total', { route: '/api/v2/documents/process', method: 'POST', status_code: '200' })).toBeGreaterThanOrEqual(1);
    expect(sample(gateway, 'http_server_request_duration_seconds_count', { route: '/api/v2/documents/process' })).toBeGreaterThanOrEqual(1);
    expect(sample(gateway, 'process_resident_memory_bytes', { service: 'gateway' })).toBeGreaterThan(0);

    const documents = await scrape('documents');
    expect(
      sample(documents, 'grpc_server_handled_total', { grpc_service: 'kb.documents.v1.DocumentsService', grpc_method: 'ProcessDocuments', grpc_code: 'OK' }),
    ).toBeGreaterThanOrEqual(1);
    expect(sample(documents, 'kb_nats_messages_processed_total', { consumer: 'documents-status', outcome: 'ack' })).toBeGreaterThanOrEqual(2);

    const ingestion = await scrape('ingestion');
    expect(sample(ingestion, 'kb_ingestion_pages_total')).toBeGreaterThanOrEqual(1);
    expect(sample(ingestion, 'kb_ingestion_documents_total', { outcome: 'completed' })).toBeGreaterThanOrEqual(1);
    // queue depth of the ingestion consumer, read from JetStream at scrape time (0 = drained)
    expect(sample(ingestion, 'kb_nats_consumer_pending_messages', { stream: 'KB_DOCUMENTS', consumer: 'ingestion' })).toBeGreaterThanOrEqual(0);

    const retrieval = await scrape('retrieval');
    expect(sample(retrieval, 'grpc_server_handled_total', { grpc_method: 'IndexDocument', grpc_code: 'OK' })).toBeGreaterThanOrEqual(1);
    for (const s of ['check', 'agent']) expect(sample(await scrape(s), 'nodejs_eventloop_lag_seconds', { service: s })).toBeGreaterThanOrEqual(0);

    // On the public port /metrics is an unknown route: 401 without a key (the gateway authenticates
    // before routing), 404 with one; never the metrics.
    const anonymous = await fetch(`${process.env.KB_E2E_BASE_URL}/metrics`);
    expect(anonymous.status).toBe(401);
    expect(await anonymous.text()).not.toContain('process_resident_memory_bytes');
    const authenticated = await fetch(`${process.env.KB_E2E_BASE_URL}/metrics`, { headers: { Authorization: `Bearer ${key}` } });
    expect(authenticated.status).toBe(404);
    expect(await authenticated.text()).not.toContain('process_resident_memory_bytes');
  });
});

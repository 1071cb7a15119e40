import { metrics, observeGrpcCall, recordModelTokens, registerConsumerLag, startMetricsServer } from './metrics';
import { traceLogFields } from './tracing';

describe('metrics server', () => {
  let server: Awaited<ReturnType<typeof startMetricsServer>>;
  const url = (p: string) => `http://127.0.0.1:${server.port}${p}`;
  beforeAll(async () => {
    server = await startMetricsServer({ service: 'unit', host: '127.0.0.1', port: 0 });
  });
  afterAll(() => server.close());

  it('serves the Prometheus text format at /metrics with the service label, 404 elsewhere', async () => {
    observeGrpcCall('/kb.documents.v1.DocumentsService/GetProject', 'NOT_FOUND', 0.004);
    recordModelTokens('embedded', { promptTokens: 120, completionTokens: 30 });
    const res = await fetch(url('/metrics'));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    expect(text).toContain(
      'grpc_server_handled_total{grpc_service="kb.documents.v1.DocumentsService",grpc_method="GetProject",grpc_code="NOT_FOUND",service="unit"} 1',
    );
    const bucket = (le: string) =>
      text
        .split('\n')
        .find(
          (l) =>
            l.startsWith('grpc_server_handling_seconds_bucket{') &&
            l.includes(`le="${le}"`) &&
            l.includes('grpc_method="GetProject"') &&
            l.includes('service="unit"'),
        );
    expect(bucket('0.001')).toBeUndefined(); // not a bucket
    expect(bucket('0.0025')).toBeUndefined();
    expect(bucket('0.005')).toMatch(/ 1$/); // 4 ms falls in the 5 ms bucket
    expect(text).toContain('kb_model_tokens_total{model="embedded",kind="prompt",service="unit"} 120');
    expect(text).toContain('kb_model_tokens_total{model="embedded",kind="completion",service="unit"} 30');
    expect(text).toMatch(/^process_cpu_user_seconds_total\{service="unit"\} /m);
    expect((await fetch(url('/'))).status).toBe(404);
    expect((await fetch(url('/metrics'), { method: 'POST' })).status).toBe(404);
  });

  it('reads JetStream queue depth at scrape time; an unreachable server leaves the series out', async () => {
    let pending = 7;
    const off = registerConsumerLag('KB_DOCUMENTS', 'ingestion', async () => ({ pending, ackPending: 2 }));
    const offBroken = registerConsumerLag('KB_DOCUMENTS', 'broken', async () => {
      throw new Error('nats down');
    });
    let text = await (await fetch(url('/metrics'))).text();
    expect(text).toContain('kb_nats_consumer_pending_messages{stream="KB_DOCUMENTS",consumer="ingestion",service="unit"} 7');
    expect(text).toContain('kb_nats_consumer_ack_pending_messages{stream="KB_DOCUMENTS",consumer="ingestion",service="unit"} 2');
    expect(text).not.toContain('consumer="broken"');
    pending = 0;
    text = await (await fetch(url('/metrics'))).text();
    expect(text).toContain('kb_nats_consumer_pending_messages{stream="KB_DOCUMENTS",consumer="ingestion",service="unit"} 0');
    off();
    offBroken();
    expect(await (await fetch(url('/metrics'))).text()).not.toContain('consumer="ingestion"');
  });

  it('fails to start on a port already in use (a misconfigured port stops the service)', async () => {
    await expect(startMetricsServer({ service: 'unit', host: '127.0.0.1', port: server.port! })).rejects.toThrow(/EADDRINUSE/);
  });

  it('counts even with the server disabled, and serves nothing', async () => {
    const off = await startMetricsServer({ service: 'unit', host: '127.0.0.1', port: 0, enabled: false });
    expect(off.port).toBeNull();
    metrics.ingestionPages.inc(3);
    expect((await metrics.ingestionPages.get()).values[0].value).toBeGreaterThanOrEqual(3);
  });
});

describe('traceLogFields', () => {
  it('is empty outside a trace (no tracer provider registered)', () => {
    expect(traceLogFields()).toEqual({});
  });
});

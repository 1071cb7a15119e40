import { spawn } from 'node:child_process';
import http from 'node:http';
import { AddressInfo } from 'node:net';
import path from 'node:path';
import { ROOT } from './support/harness';

/**
 * OTLP export, the path the default stack leaves off: a process started the way every service is
 * (the built `@kb/telemetry/register` first) with OTEL_EXPORTER_OTLP_ENDPOINT set sends its spans
 * to a real HTTP receiver as OTLP/HTTP protobuf on `<endpoint>/v1/traces`, and a NATS-style
 * producer span carries its W3C `traceparent` in the message headers.
 */
const SCRIPT = `
  require(${JSON.stringify(path.join(ROOT, 'dist/libs/telemetry/src/register.js'))});
  const t = require(${JSON.stringify(path.join(ROOT, 'dist/libs/telemetry/src/index.js'))});
  const headers = new Map();
  const h = { get: (k) => headers.get(k) ?? '', set: (k, v) => headers.set(k, v) };
  t.withProducerSpan('documents.process.requested', h, async () => {
    process.stdout.write(JSON.stringify({ traceparent: h.get('traceparent'), exporting: t.tracingState().exporting }) + '\\n');
  }).then(() => t.tracingState().shutdown()).then(() => process.exit(0));
`;

/** Runs SCRIPT in a child process with `env` added, against a fresh OTLP/HTTP receiver. */
async function probe(env: Record<string, string>) {
  const received: Array<{ url: string; type: string; body: Buffer }> = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      received.push({ url: req.url ?? '', type: String(req.headers['content-type']), body: Buffer.concat(chunks) });
      res.writeHead(200, { 'Content-Type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const child = spawn(process.execPath, ['-e', SCRIPT], {
      env: { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_SERVICE_NAME: 'kb-export-probe', OTEL_SDK_DISABLED: 'false', ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    const code = await new Promise((r) => child.on('exit', r));
    return { code, printed: JSON.parse(out.trim()), received };
  } finally {
    server.close();
  }
}

test('spans are exported by OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT is set', async () => {
  const { code, printed, received } = await probe({ OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=probe-env' });
  {
    expect(code).toBe(0);
    expect(printed.exporting).toBe(true);
    const [, traceId, spanId, flags] = printed.traceparent.split('-');
    expect(flags).toBe('01'); // sampled: it is recorded and exported
    expect(received).toHaveLength(1);
    expect(received[0].url).toBe('/v1/traces');
    expect(received[0].type).toBe('application/x-protobuf');
    // protobuf: ids are raw bytes, strings are UTF-8
    const body = received[0].body;
    expect(body.includes(Buffer.from(traceId, 'hex'))).toBe(true);
    expect(body.includes(Buffer.from(spanId, 'hex'))).toBe(true);
    expect(body.includes(Buffer.from('kb-export-probe'))).toBe(true);
    expect(body.includes(Buffer.from('documents.process.requested publish'))).toBe(true);
    expect(body.includes(Buffer.from('probe-env'))).toBe(true); // OTEL_RESOURCE_ATTRIBUTES
  }
});

test('OTEL_TRACES_SAMPLER is honoured: always_off records and exports nothing, ids still propagate', async () => {
  const { code, printed, received } = await probe({ OTEL_TRACES_SAMPLER: 'always_off' });
  expect(code).toBe(0);
  const [, traceId, , flags] = printed.traceparent.split('-');
  expect(traceId).toMatch(/^[0-9a-f]{32}$/);
  expect(flags).toBe('00');
  expect(received).toHaveLength(0);
});

#!/usr/bin/env node
// Container health check of the kb-platform image (Dockerfile HEALTHCHECK, docker-compose.yml).
//
//   node /app/deploy/docker/healthcheck.mjs [SERVICE] [--ready]
//
// gateway: HTTP GET /healthz (process up), or /readyz with --ready (database and every backing
// service reachable). The six gRPC services: the standard grpc.health.v1.Health/Check, overall
// status (service ""), must answer SERVING. Ports come from the same variables the services read
// (GATEWAY_PORT, DOCUMENTS_GRPC_PORT, ...), with the same defaults.
//
// Without SERVICE, the service is found in PID 1's command line (the image runs
// `tini -- entrypoint.sh <service>`), then in KB_SERVICE. Anything else (kbctl, a shell) has no
// health to check and exits 0. Exit 0 = healthy, 1 = unhealthy (reason on stderr).
import { readFileSync } from 'node:fs';
import http from 'node:http';

const GRPC_PORTS = { documents: 50051, ingestion: 50052, retrieval: 50053, check: 50054, agent: 50055, webhooks: 50056 };
const SERVICES = ['gateway', ...Object.keys(GRPC_PORTS)];
const TIMEOUT_MS = Number(process.env.KB_HEALTHCHECK_TIMEOUT_MS ?? 4000);

function detectService(args) {
  const named = args.find((a) => SERVICES.includes(a));
  if (named) return named;
  try {
    const cmdline = readFileSync('/proc/1/cmdline', 'utf8').split('\0');
    const found =
      cmdline.find((a) => SERVICES.includes(a)) ?? cmdline.map((a) => a.match(/\/dist\/apps\/([a-z]+)\/src\/main\.js$/)?.[1]).find((s) => SERVICES.includes(s));
    if (found) return found;
  } catch {
    // not Linux, or /proc not mounted: fall through
  }
  return SERVICES.includes(process.env.KB_SERVICE ?? '') ? process.env.KB_SERVICE : undefined;
}

/** The address to reach a listener bound to `host` from inside the same container. */
function localHost(host) {
  return !host || host === '0.0.0.0' || host === '::' || host === '[::]' ? '127.0.0.1' : host;
}

function port(name, fallback) {
  const v = process.env[name];
  return v && /^\d+$/.test(v) ? Number(v) : fallback;
}

function checkHttp(path) {
  const host = localHost(process.env.GATEWAY_HOST);
  const p = port('GATEWAY_PORT', 8080);
  return new Promise((resolve) => {
    const req = http.get({ host, port: p, path, timeout: TIMEOUT_MS }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve(res.statusCode === 200 ? { ok: true } : { ok: false, reason: `GET ${path} -> ${res.statusCode} ${body.slice(0, 300)}` }));
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${TIMEOUT_MS} ms`)));
    req.on('error', (e) => resolve({ ok: false, reason: `GET http://${host}:${p}${path}: ${e.message}` }));
  });
}

async function checkGrpc(service) {
  const { default: grpc } = await import('@grpc/grpc-js');
  const address = `${localHost(process.env.GRPC_HOST)}:${port(`${service.toUpperCase()}_GRPC_PORT`, GRPC_PORTS[service])}`;
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  // HealthCheckRequest { string service = 1; } with service "" is an empty message;
  // HealthCheckResponse { ServingStatus status = 1; }: bytes [0x08, status], SERVING = 1.
  const serialize = () => Buffer.alloc(0);
  const deserialize = (buf) => ({ status: buf.length >= 2 && buf[0] === 0x08 ? buf[1] : 0 });
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      '/grpc.health.v1.Health/Check',
      serialize,
      deserialize,
      {},
      new grpc.Metadata(),
      { deadline: Date.now() + TIMEOUT_MS },
      (err, res) => {
        client.close();
        if (err) resolve({ ok: false, reason: `grpc.health.v1.Health/Check at ${address}: ${err.message}` });
        else if (res.status !== 1) resolve({ ok: false, reason: `grpc.health.v1.Health/Check at ${address}: status ${res.status} (not SERVING)` });
        else resolve({ ok: true });
      },
    );
  });
}

const args = process.argv.slice(2);
const service = detectService(args);
if (!service) {
  process.stdout.write('healthcheck: no kb-platform service in this container; nothing to check\n');
  process.exit(0);
}
const result = service === 'gateway' ? await checkHttp(args.includes('--ready') ? '/readyz' : '/healthz') : await checkGrpc(service);
if (!result.ok) {
  process.stderr.write(`healthcheck ${service}: ${result.reason}\n`);
  process.exit(1);
}
process.exit(0);

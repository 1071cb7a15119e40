import { createLogger, ErrorCode, storageConfigFromEnv } from '@kb/common';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import request from 'supertest';
import { createGateway, Gateway, GatewayConfig } from '../../apps/gateway/src/gateway';
import { buildGatewayReference } from '../../apps/gateway/src/reference';
import { api, baseUrl, newOrg, suiteGrpcUrls, suiteStack } from './support/harness';

jest.setTimeout(180_000);

const secrets = () => JSON.parse(readFileSync(path.join(process.env.KB_E2E_DATA_DIR!, 'secrets.json'), 'utf8'));

/** Gateway settings pointing at the suite's stack; `overrides` replaces single addresses. */
function configFor(overrides: Partial<GatewayConfig> = {}): GatewayConfig {
  const s = suiteStack();
  return {
    DATABASE_URL: s.databaseUrl,
    NATS_URL: process.env.KB_E2E_NATS_URL!,
    ...suiteGrpcUrls(s),
    GATEWAY_BODY_LIMIT_BYTES: 1024 * 1024,
    GATEWAY_KEY_CACHE_TTL_MS: 60_000,
    GATEWAY_REQUEST_TIMEOUT_MS: 330_000,
    GATEWAY_SHUTDOWN_GRACE_MS: 5_000,
    GATEWAY_CORS_ORIGINS: '',
    CHAT_SSE_HEARTBEAT_MS: 15_000,
    storage: storageConfigFromEnv({
      STORAGE_DRIVER: 'local',
      STORAGE_LOCAL_DIR: path.join(process.env.KB_E2E_DATA_DIR!, 'objects'),
      PUBLIC_BASE_URL: baseUrl(),
      STORAGE_SIGNING_SECRET: secrets().storageSigningSecret,
      S3_ENDPOINT: '127.0.0.1',
      S3_USE_SSL: false,
      S3_BUCKET: 'kb-documents',
      S3_REGION: 'us-east-1',
    }),
    ...overrides,
  };
}

/** A TCP server that accepts connections and never answers (a hung backing service). */
function blackhole(): Promise<{ address: string; close: () => void }> {
  return new Promise((resolve) => {
    const sockets = new Set<net.Socket>();
    const srv = net.createServer((s) => {
      sockets.add(s);
      s.on('error', () => undefined);
    });
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      resolve({ address: `127.0.0.1:${port}`, close: () => (sockets.forEach((s) => s.destroy()), srv.close()) });
    });
  });
}

async function unusedAddress(): Promise<string> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const { port } = srv.address() as net.AddressInfo;
  await new Promise((r) => srv.close(r));
  return `127.0.0.1:${port}`;
}

const logger = createLogger('gateway-test');
const ENVELOPE_ERROR = { success: false, error: { code: expect.any(String), message: expect.any(String) }, request_id: expect.any(String) };
const INTERNALS = /\bat \S+ \(|node_modules|\.[jt]s:\d+|TypeError|SyntaxError|ECONNREFUSED|grpc|typeorm|postgres|fastify|nest/i;

describe('gateway: OpenAPI reference', () => {
  let gateway: Gateway;
  let served: any;
  beforeAll(async () => {
    gateway = await createGateway(configFor(), logger, { serveReference: false });
    served = (await request(baseUrl()).get('/docs/openapi.json')).body;
  });
  afterAll(async () => {
    await gateway?.close();
  });

  it('documents every route the gateway registers, and only those', () => {
    // Not API endpoints: the reference UI's own files and the presigned storage URLs (their
    // signature is the authorization; documented in docs/gateway.md).
    const internal = (url: string) => url === '/docs' || url.startsWith('/docs/') || url.startsWith('/docs-') || url.startsWith('/storage/');
    const registered = new Set(
      gateway.routes
        .filter((r) => !['HEAD', 'OPTIONS'].includes(r.method) && !internal(r.url))
        .map((r) => `${r.method} ${r.url.replace(/:([A-Za-z_]+)/g, '{$1}')}`),
    );
    const documented = new Set(
      Object.entries(served.paths as Record<string, Record<string, unknown>>).flatMap(([p, ops]) =>
        Object.keys(ops)
          .filter((m) => ['get', 'post', 'put', 'patch', 'delete'].includes(m))
          .map((m) => `${m.toUpperCase()} ${p}`),
      ),
    );
    expect(registered.size).toBeGreaterThanOrEqual(16);
    expect([...registered].filter((r) => !documented.has(r))).toEqual([]);
    expect([...documented].filter((r) => !registered.has(r))).toEqual([]);
    expect(gateway.openapi.paths).toEqual(served.paths);
  });

  it('is the document `npm run openapi` exports without any backing service', async () => {
    expect(await buildGatewayReference()).toEqual(served);
  });

  it('is OpenAPI 3.1 with schemas, every error code, headers and examples on every operation', () => {
    expect(served.openapi).toBe('3.1.0');
    expect(served.components.schemas.ErrorEnvelope.properties.error.properties.code.enum.sort()).toEqual(Object.values(ErrorCode).sort());
    expect(JSON.stringify(served)).not.toContain('"nullable"');
    const codesSeen = new Set<string>();
    for (const [p, ops] of Object.entries(served.paths as Record<string, Record<string, any>>)) {
      for (const [method, op] of Object.entries(ops)) {
        const where = `${method.toUpperCase()} ${p}`;
        const success = Object.entries(op.responses).filter(([s]) => s.startsWith('2'));
        expect([where, success.length > 0]).toEqual([where, true]);
        for (const [status, r] of Object.entries(op.responses as Record<string, any>)) {
          expect([where, status, Boolean(r.headers?.['X-Request-Id'])]).toEqual([where, status, true]);
          if (p.startsWith('/api/') && status !== '401' && status !== '431')
            expect([where, status, Object.keys(r.headers)]).toEqual([
              where,
              status,
              expect.arrayContaining(['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']),
            ]);
          if (status === '429') expect(r.headers['Retry-After']).toBeDefined();
          if (Number(status) >= 400 && p.startsWith('/api/')) {
            const examples = Object.values<{ value: any }>(r.content['application/json'].examples);
            expect(examples.length).toBeGreaterThan(0);
            for (const e of examples) codesSeen.add(e.value.error.code);
          }
        }
        if (p.startsWith('/api/')) {
          expect([where, op.security]).toEqual([where, [{ bearer: [] }]]);
          for (const s of ['401', '402', '429', '500', '503', '504']) expect([where, s, Boolean(op.responses[s])]).toEqual([where, s, true]);
          if (method === 'post') expect(op.parameters).toContainEqual({ $ref: '#/components/parameters/IdempotencyKey' });
        }
      }
    }
    // Every code of the contract is documented somewhere (AGENT_NOT_ENABLED by the agent routes;
    // METHOD_NOT_ALLOWED answers methods no operation has: in the document's description).
    expect([...codesSeen].sort()).toEqual(
      expect.arrayContaining(
        Object.values(ErrorCode)
          .filter((c) => c !== ErrorCode.AGENT_NOT_ENABLED && c !== ErrorCode.METHOD_NOT_ALLOWED)
          .sort(),
      ),
    );
    expect(served.info.description).toContain('`METHOD_NOT_ALLOWED` (405)');
    expect(served.components.schemas.ProjectView.properties.name.example).toBeDefined();
  });

  it('serves the browsable reference at /docs', async () => {
    const res = await request(baseUrl()).get('/docs');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toContain('text/html');
    expect(res.text).toContain('swagger');
  });
});

describe('gateway: errors in the envelope', () => {
  const org = newOrg('Errors Org');
  const a = api(org.key);

  it('maps every kind of client mistake to 4xx in the envelope, never with internals', async () => {
    const cases: Array<[string, () => Promise<request.Response>, number, string]> = [
      ['malformed JSON', () => a.post('/api/v2/projects').set('Content-Type', 'application/json').send('{"name": "x"'), 400, 'VALIDATION_ERROR'],
      ['wrong content type', () => a.post('/api/v2/projects').set('Content-Type', 'text/plain').send('name=x'), 400, 'VALIDATION_ERROR'],
      ['form body', () => a.post('/api/v2/projects').type('form').send({ name: 'x' }), 400, 'VALIDATION_ERROR'],
      ['JSON array body', () => a.post('/api/v2/projects').send([1, 2]), 400, 'VALIDATION_ERROR'],
      ['JSON null body', () => a.post('/api/v2/projects').set('Content-Type', 'application/json').send('null'), 400, 'VALIDATION_ERROR'],
      ['malformed UUID in path', () => a.get('/api/v2/documents/not-a-uuid'), 400, 'VALIDATION_ERROR'],
      ['malformed UUID in query', () => a.get('/api/v2/documents?project_id=123'), 400, 'VALIDATION_ERROR'],
      ['malformed UUID list in query', () => a.get('/api/v2/documents?document_ids=abc,def'), 400, 'VALIDATION_ERROR'],
      ['unknown enum value', () => a.get('/api/v2/documents?status=archived'), 400, 'VALIDATION_ERROR'],
      ['limit over 200', () => a.get('/api/v2/projects?limit=201'), 400, 'VALIDATION_ERROR'],
      ['negative offset', () => a.get('/api/v2/projects?offset=-1'), 400, 'VALIDATION_ERROR'],
      ['non-numeric limit', () => a.get('/api/v2/projects?limit=ten'), 400, 'VALIDATION_ERROR'],
      ['unknown route', () => a.get('/api/v2/unknown'), 404, 'NOT_FOUND'],
      ['method the path does not serve', () => a.patch('/api/v2/documents'), 405, 'METHOD_NOT_ALLOWED'],
      ['unknown top-level route', () => a.get('/nope'), 404, 'NOT_FOUND'],
      ['any route without a key', () => request(baseUrl()).get('/nope'), 401, 'UNAUTHORIZED'],
      ['body over the limit', () => a.post('/api/v2/projects').send({ name: 'x', description: 'y'.repeat(11 * 1024 * 1024) }), 413, 'PAYLOAD_TOO_LARGE'],
      ['bad idempotency key', () => a.post('/api/v2/projects').set('Idempotency-Key', 'x'.repeat(300)).send({ name: 'x' }), 400, 'VALIDATION_ERROR'],
      ['unknown project', () => a.get('/api/v2/projects/6f1c2a9e-0000-4000-8000-000000000000'), 404, 'NOT_FOUND'],
    ];
    for (const [name, send, status, code] of cases) {
      const res = await send();
      expect([name, res.status, res.body]).toEqual([name, status, { ...ENVELOPE_ERROR, error: { code, message: expect.any(String) } }]);
      expect([name, INTERNALS.test(res.body.error.message)]).toEqual([name, false]);
      expect(res.headers['x-request-id']).toBe(res.body.request_id);
      if (res.status !== 401) expect([name, res.headers['x-ratelimit-limit']]).toEqual([name, '6000']);
    }
  });

  it('answers 405 with Allow for a method a path does not serve; unknown paths stay 404, HEAD keeps working (issue 29 defect 10)', async () => {
    const cases: Array<[string, () => Promise<request.Response>, string]> = [
      ['PUT on a collection', () => a.put('/api/v2/projects').send({ name: 'x' }), 'GET, HEAD, POST'],
      ['TRACE on a collection', () => request(baseUrl()).trace('/api/v2/check/runs').set('Authorization', `Bearer ${org.key}`), 'GET, HEAD, POST'],
      ['POST on a resource', () => a.post('/api/v2/projects/6f1c2a9e-0000-4000-8000-000000000000').send({}), 'GET, HEAD, PATCH, DELETE'],
      // A body that is not JSON does not turn it into a 400: the method is what is wrong.
      ['DELETE with a text body', () => a.delete('/api/v2/check/verify').set('Content-Type', 'text/plain').send('x'), 'POST'],
      ['POST on a probe (no key needed)', () => request(baseUrl()).post('/healthz'), 'GET, HEAD'],
    ];
    for (const [name, send, allow] of cases) {
      const res = await send();
      expect([name, res.status, res.headers.allow, res.body]).toEqual([
        name,
        405,
        allow,
        { ...ENVELOPE_ERROR, error: { code: 'METHOD_NOT_ALLOWED', message: expect.any(String) } },
      ]);
      expect(res.headers['x-request-id']).toBe(res.body.request_id);
    }
    // Like any answer to the API: the key first (401 without one), the rate-limit headers with one.
    expect((await request(baseUrl()).put('/api/v2/projects')).status).toBe(401);
    expect((await a.put('/api/v2/projects')).headers['x-ratelimit-limit']).toBe('6000');
    // A path the gateway does not serve at all stays 404, whatever the method.
    const unknown = await a.put('/api/v2/nothing-here');
    expect([unknown.status, unknown.headers.allow, unknown.body.error.code]).toEqual([404, undefined, 'NOT_FOUND']);
    // HEAD of a GET route is served (no 405); the review workspace keeps its own 404.
    expect((await request(baseUrl()).head('/api/v2/projects').set('Authorization', `Bearer ${org.key}`)).status).toBe(200);
    // Where a fixed path and a parameter route both match (`/api/v2/documents/process` and
    // `/api/v2/documents/{id}`), the path is the fixed one's, as documented: GET is a 405 too.
    for (const res of [await a.get('/api/v2/documents/process'), await a.put('/api/v2/documents/process')])
      expect([res.status, res.headers.allow]).toEqual([405, 'POST']);
    expect((await a.get('/api/v2/documents/not-a-uuid')).status).toBe(400);
    expect((await request(baseUrl()).post('/app/x')).status).toBe(404);
  });

  /**
   * POSTs `body` to the stack's gateway with a raw `http.request` on `agent`, resolving with the
   * answer, the socket it came on, and whether `100 Continue` came / the body was sent. With
   * `expectContinue`, the body is written only on `100 Continue` (what curl and browsers do).
   */
  function rawPost(body: Buffer, agent: http.Agent, expectContinue = false) {
    const url = new URL('/api/v2/projects', baseUrl());
    return new Promise<{ status: number; json: any; socket: unknown; continued: boolean; bodySent: boolean }>((resolve, reject) => {
      let continued = false;
      let bodySent = false;
      const req = http.request(url, {
        method: 'POST',
        agent,
        headers: {
          Authorization: `Bearer ${org.key}`,
          'Content-Type': 'application/json',
          'Content-Length': body.length,
          ...(expectContinue ? { Expect: '100-continue' } : {}),
        },
      });
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode!, json: JSON.parse(Buffer.concat(chunks).toString('utf8')), socket: req.socket, continued, bodySent }),
        );
      });
      req.on('error', reject);
      if (expectContinue) {
        req.on('continue', () => {
          continued = true;
          bodySent = true;
          req.end(body);
        });
      } else {
        bodySent = true;
        req.end(body);
      }
    });
  }
  const oversized = Buffer.from(JSON.stringify({ name: 'x', description: 'y'.repeat(11 * 1024 * 1024) }));

  it('answers an oversized body with the 413 envelope, not a reset, and keeps the connection for the next request', async () => {
    // The gateway reads and drops the rest of a refused body (REFUSED_BODY_DRAIN_BYTES) instead of
    // closing while the client still writes: closing made the client's write fail with EPIPE.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const first = await rawPost(oversized, agent);
      expect([first.status, first.json]).toEqual([413, { ...ENVELOPE_ERROR, error: { code: 'PAYLOAD_TOO_LARGE', message: expect.any(String) } }]);
      const next = await rawPost(Buffer.from(JSON.stringify({ name: 'after-413' })), agent);
      expect(next.status).toBe(201);
      expect(next.socket).toBe(first.socket);
    } finally {
      agent.destroy();
    }
  });

  it('answers 413 before the body with Expect: 100-continue, and lets a body within the limit continue', async () => {
    const agent = new http.Agent({ keepAlive: false });
    try {
      const refused = await rawPost(oversized, agent, true);
      expect([refused.status, refused.continued, refused.bodySent]).toEqual([413, false, false]);
      expect(refused.json).toEqual({ ...ENVELOPE_ERROR, error: { code: 'PAYLOAD_TOO_LARGE', message: expect.any(String) } });
      const accepted = await rawPost(Buffer.from(JSON.stringify({ name: 'continued' })), agent, true);
      expect([accepted.status, accepted.continued]).toEqual([201, true]);
    } finally {
      agent.destroy();
    }
  });

  it('keeps X-Request-Id on responses a handler writes to the raw socket itself (streams, presigned storage)', async () => {
    // The local storage driver answers its presigned URLs by writing the raw Node response (an
    // expired signature → 403 in S3's format), bypassing Fastify's reply like an SSE handler does.
    const res = await request(baseUrl()).get('/storage/v1/objects/nothing?expires=1&signature=x').set('X-Request-Id', 'raw-writer-1');
    expect(res.status).toBe(403);
    expect(res.headers['x-request-id']).toBe('raw-writer-1');
  });

  it('503 when a backing service is down, 504 when it hangs, and drains in-flight requests on shutdown', async () => {
    const hung = await blackhole();
    const down = await unusedAddress();
    const gw = await createGateway(configFor({ DOCUMENTS_GRPC_URL: down, CHECK_GRPC_URL: hung.address, GATEWAY_REQUEST_TIMEOUT_MS: 1500 }), logger, {
      serveReference: false,
    });
    try {
      await gw.app.listen(0, '127.0.0.1');
      const url = await gw.app.getUrl();
      const unavailable = await api(org.key, url).get('/api/v2/projects');
      expect(unavailable.status).toBe(503);
      expect(unavailable.body).toEqual({ ...ENVELOPE_ERROR, error: { code: 'SERVICE_UNAVAILABLE', message: expect.any(String) } });
      expect(unavailable.headers['x-ratelimit-limit']).toBe('6000');

      const started = Date.now();
      const slow = api(org.key, url)
        .post('/api/v2/check/verify')
        .send({ project_id: '6f1c2a9e-0000-4000-8000-000000000001', requirement: 'Workers must wear helmets on site.' })
        .then((r) => r);
      await new Promise((r) => setTimeout(r, 300));
      // Shutdown begins while the verify call is in flight: it still gets its (timeout) answer.
      const closing = gw.close();
      const timedOut = await slow;
      expect(timedOut.status).toBe(504);
      expect(timedOut.body).toEqual({ ...ENVELOPE_ERROR, error: { code: 'TIMEOUT', message: expect.stringContaining('seconds') } });
      expect(Date.now() - started).toBeGreaterThanOrEqual(1400);
      await closing;
      await expect(fetch(`${url}/healthz`)).rejects.toThrow();
    } finally {
      hung.close();
      await gw.close().catch(() => undefined);
    }
  });

  it('is not ready while NATS is unreachable, and ready again once it is back (issue 29 defect 8)', async () => {
    // A TCP relay to the suite's NATS that the test cuts (what the gateway sees when nats-server dies).
    const upstream = new URL(process.env.KB_E2E_NATS_URL!.split(',')[0]);
    const sockets = new Set<net.Socket>();
    let relay: net.Server | null = null;
    const port = Number((await unusedAddress()).split(':')[1]);
    const up = () =>
      new Promise<void>((resolve) => {
        relay = net.createServer((client) => {
          const server = net.connect(Number(upstream.port), upstream.hostname);
          for (const sock of [client, server]) {
            sockets.add(sock);
            sock.on('close', () => sockets.delete(sock));
            sock.on('error', () => undefined);
          }
          client.pipe(server).pipe(client);
        });
        relay.listen(port, '127.0.0.1', () => resolve());
      });
    const down = async () => {
      const r = relay;
      relay = null;
      sockets.forEach((sock) => sock.destroy());
      if (r) await new Promise((resolve) => r.close(resolve));
    };
    await up();
    const gw = await createGateway(configFor({ NATS_URL: `nats://127.0.0.1:${port}` }), logger, { serveReference: false });
    const readyz = async (url: string) => {
      const res = await request(url).get('/readyz');
      return { status: res.status, nats: res.body.data?.checks?.nats, message: res.body.error?.message };
    };
    try {
      await gw.app.listen(0, '127.0.0.1');
      const url = await gw.app.getUrl();
      expect(await readyz(url)).toEqual({ status: 200, nats: 'ok', message: undefined });
      await down();
      const started = Date.now();
      expect(await readyz(url)).toEqual({ status: 503, nats: undefined, message: expect.stringMatching(/^Not ready: NATS is unavailable\.$/) });
      // At once (the client knows it is disconnected), not after minutes; within the 2 s check bound anyway.
      expect(Date.now() - started).toBeLessThan(2_500);
      await up();
      let back = await readyz(url);
      for (let i = 0; i < 50 && back.status !== 200; i++) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        back = await readyz(url);
      }
      expect(back).toEqual({ status: 200, nats: 'ok', message: undefined });
    } finally {
      await gw.close().catch(() => undefined);
      await down();
    }
  });

  it('sends security headers and no CORS headers unless origins are configured', async () => {
    const res = await a.get('/api/v2/organization').set('Origin', 'https://evil.example');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['strict-transport-security']).toBeDefined();
    expect(res.headers['content-security-policy']).toBe("default-src 'none'; frame-ancestors 'none'");
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
    expect(res.headers['x-powered-by']).toBeUndefined();
    // Errors and public routes carry them too.
    for (const other of [
      await a.get('/api/v2/no-such-route'),
      await request(baseUrl()).get('/api/v2/organization'),
      await request(baseUrl()).get('/healthz'),
    ]) {
      expect(other.headers['x-content-type-options']).toBe('nosniff');
      expect(other.headers['x-frame-options']).toBe('SAMEORIGIN');
    }
  });

  it('allows configured CORS origins, preflight included', async () => {
    const gw = await createGateway(configFor({ GATEWAY_CORS_ORIGINS: 'https://app.example' }), logger, { serveReference: false });
    try {
      await gw.app.listen(0, '127.0.0.1');
      const url = await gw.app.getUrl();
      const preflight = await request(url)
        .options('/api/v2/projects')
        .set('Origin', 'https://app.example')
        .set('Access-Control-Request-Method', 'POST')
        .set('Access-Control-Request-Headers', 'authorization,content-type,idempotency-key');
      expect(preflight.status).toBe(204);
      expect(preflight.headers['access-control-allow-origin']).toBe('https://app.example');
      const res = await api(org.key, url).get('/api/v2/organization').set('Origin', 'https://app.example');
      expect(res.headers['access-control-allow-origin']).toBe('https://app.example');
      expect(res.headers['access-control-expose-headers']).toContain('X-RateLimit-Remaining');
      const other = await api(org.key, url).get('/api/v2/organization').set('Origin', 'https://evil.example');
      expect(other.headers['access-control-allow-origin']).toBeUndefined();
    } finally {
      await gw.close();
    }
  });

  it('answers CORS preflights of presigned upload URLs with STORAGE_CORS_ORIGINS, apart from the API origins', async () => {
    const gw = await createGateway(configFor({ GATEWAY_CORS_ORIGINS: 'https://api-client.example', STORAGE_CORS_ORIGINS: 'https://app.example' }), logger, {
      serveReference: false,
    });
    try {
      await gw.app.listen(0, '127.0.0.1');
      const url = await gw.app.getUrl();
      const slot = (await a.post('/api/v2/documents').send({ file_name: 'cors.txt', content_type: 'text/plain', size_bytes: 5 })).body.data;
      const upload = new URL(slot.upload.url);
      const preflight = (origin: string) =>
        request(url)
          .options(upload.pathname + upload.search)
          .set('Origin', origin)
          .set('Access-Control-Request-Method', 'PUT')
          .set('Access-Control-Request-Headers', 'content-type');
      const allowed = await preflight('https://app.example');
      expect(allowed.status).toBe(204);
      expect(allowed.headers['access-control-allow-origin']).toBe('https://app.example');
      expect(allowed.headers['access-control-allow-methods']).toContain('PUT');
      expect(allowed.headers['vary']).toContain('Origin');
      for (const origin of ['https://evil.example', 'https://api-client.example']) {
        const refused = await preflight(origin);
        expect(refused.status).toBe(403);
        expect(refused.headers['access-control-allow-origin']).toBeUndefined();
      }
      // The API's own CORS is unchanged.
      const api2 = await request(url).options('/api/v2/projects').set('Origin', 'https://api-client.example').set('Access-Control-Request-Method', 'POST');
      expect(api2.status).toBe(204);
      expect(api2.headers['access-control-allow-origin']).toBe('https://api-client.example');
    } finally {
      await gw.close();
    }
  });
});

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { KbClient } from './client';
import {
  KbApiError,
  KbAuthenticationError,
  KbConflictError,
  KbConnectionError,
  KbInternalError,
  KbNotFoundError,
  KbRateLimitError,
  KbServiceUnavailableError,
  KbTimeoutError,
  KbValidationError,
} from './errors';

/** What the server saw of one request. */
interface Seen {
  method: string;
  url: string;
  idempotencyKey: string | undefined;
  authorization: string | undefined;
  body: string;
  at: number;
}

/** One scripted answer: status, headers and body, or 'hang' (never answers) or 'reset' (drops the connection). */
type Answer = { status: number; headers?: Record<string, string>; body?: unknown; delayBodyMs?: number } | 'hang' | 'reset';

const envelope = (code: string, message: string) => ({ success: false, error: { code, message }, request_id: `req-${code.toLowerCase()}` });

/**
 * A real HTTP server on 127.0.0.1 answering each request with the next scripted answer (the last
 * one repeats), recording what it received.
 */
async function scriptedServer(answers: Answer[]) {
  const seen: Seen[] = [];
  const open = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({
        method: req.method!,
        url: req.url!,
        idempotencyKey: req.headers['idempotency-key'] as string | undefined,
        authorization: req.headers.authorization,
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      });
      const answer = answers[Math.min(seen.length - 1, answers.length - 1)];
      if (answer === 'hang') return void open.add(res);
      if (answer === 'reset') return void req.socket.destroy();
      const body = answer.body === undefined ? '' : typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body);
      res.writeHead(answer.status, { 'Content-Type': 'application/json', ...answer.headers });
      if (answer.delayBodyMs) {
        res.flushHeaders();
        setTimeout(() => res.end(body), answer.delayBodyMs);
      } else res.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    seen,
    baseUrl: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of open) res.socket?.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const ok = { status: 200, body: { success: true, data: { id: 'org-1', name: 'Org' } } };

describe('KbClient retries, timeout and typed errors (against a local HTTP server)', () => {
  let server: Awaited<ReturnType<typeof scriptedServer>> | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });
  const client = (options: ConstructorParameters<typeof KbClient>[0] = {}) => new KbClient({ baseUrl: server!.baseUrl, apiKey: 'kb_test', ...options });

  it.each([408, 500, 502, 503, 504])('retries a %i and returns the answer that follows', async (status) => {
    server = await scriptedServer([{ status, body: envelope('X', 'transient') }, ok]);
    const kb = client({ maxRetries: 2 });
    expect(await kb.data(kb.api.GET('/api/v2/organization'))).toEqual({ id: 'org-1', name: 'Org' });
    expect(server.seen).toHaveLength(2);
    expect(server.seen.every((s) => s.authorization === 'Bearer kb_test')).toBe(true);
  });

  it('keeps the Idempotency-Key of a POST, and its body, on every retry', async () => {
    server = await scriptedServer([
      { status: 503, body: envelope('SERVICE_UNAVAILABLE', 'down') },
      { status: 502, body: '<html>bad gateway</html>' },
      { status: 201, body: { success: true, data: { id: 'p-1' } } },
    ]);
    const kb = client();
    const { data } = await kb.api.POST('/api/v2/projects', { body: { name: 'Retried' } });
    expect(data).toEqual({ success: true, data: { id: 'p-1' } });
    expect(server.seen.map((s) => s.body)).toEqual(Array(3).fill(JSON.stringify({ name: 'Retried' })));
    const keys = server.seen.map((s) => s.idempotencyKey);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(new Set(keys).size).toBe(1);
  });

  it('waits Retry-After on a 429 before the retry', async () => {
    server = await scriptedServer([{ status: 429, headers: { 'Retry-After': '1' }, body: envelope('RATE_LIMITED', 'Wait 1 s.') }, ok]);
    const kb = client();
    await kb.data(kb.api.GET('/api/v2/organization'));
    expect(server.seen).toHaveLength(2);
    expect(server.seen[1].at - server.seen[0].at).toBeGreaterThanOrEqual(950);
  });

  it('throws a 429 at once, typed, when Retry-After is longer than maxRetryDelaySeconds or no retries are left', async () => {
    server = await scriptedServer([{ status: 429, headers: { 'Retry-After': '120' }, body: envelope('RATE_LIMITED', 'Wait 120 s.') }]);
    const error = await client({ maxRetryDelaySeconds: 60 })
      .data(client().api.GET('/api/v2/organization'))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(KbRateLimitError);
    expect(error).toBeInstanceOf(KbApiError);
    expect(error).toMatchObject({ status: 429, code: 'RATE_LIMITED', requestId: 'req-rate_limited', retryAfter: 120, retryAfterSeconds: 120 });
    expect(server.seen).toHaveLength(1);
  });

  it('gives up after maxRetries and returns the last answer, typed by its code', async () => {
    server = await scriptedServer([{ status: 503, headers: { 'Retry-After': '0' }, body: envelope('SERVICE_UNAVAILABLE', 'The index is down.') }]);
    const kb = client({ maxRetries: 2 });
    const error = await kb.data(kb.api.GET('/api/v2/organization')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(KbServiceUnavailableError);
    expect(error).toMatchObject({ status: 503, message: 'The index is down.', retryAfter: 0 });
    expect(server.seen).toHaveLength(3);
  });

  it.each([
    [400, 'VALIDATION_ERROR', KbValidationError],
    [401, 'UNAUTHORIZED', KbAuthenticationError],
    [404, 'NOT_FOUND', KbNotFoundError],
    [409, 'CONFLICT', KbConflictError],
  ])('does not retry a %i: throws it at once as its class', async (status, code, Class) => {
    server = await scriptedServer([{ status, body: envelope(code, 'no') }, ok]);
    const kb = client();
    const error = await kb.data(kb.api.POST('/api/v2/projects', { body: { name: 'x' } })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Class);
    expect(error).toBeInstanceOf(KbApiError);
    expect(error).toMatchObject({ status, code, requestId: `req-${code.toLowerCase()}` });
    expect(server.seen).toHaveLength(1);
  });

  it('retries a 409 only when a retried POST finds its first attempt still in progress', async () => {
    server = await scriptedServer([
      { status: 500, body: envelope('INTERNAL_ERROR', 'boom') },
      { status: 409, body: envelope('CONFLICT', 'A request with this Idempotency-Key is still in progress.') },
      ok,
    ]);
    const kb = client();
    await kb.data(kb.api.POST('/api/v2/projects', { body: { name: 'x' } }));
    expect(server.seen).toHaveLength(3);
  });

  it('gives each attempt timeoutMs to answer, retries a timed-out attempt, then throws KbTimeoutError', async () => {
    server = await scriptedServer(['hang']);
    const kb = client({ timeoutMs: 200, maxRetries: 1 });
    const started = Date.now();
    const error = await kb.data(kb.api.GET('/api/v2/organization')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(KbTimeoutError);
    expect((error as Error).message).toMatch(/within 200 ms \(2 attempts\)/);
    expect(server.seen).toHaveLength(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(400);
  });

  it('a timed-out attempt followed by an answer succeeds; the timeout stops once the headers are in', async () => {
    server = await scriptedServer(['hang', { ...ok, delayBodyMs: 400 }]);
    const kb = client({ timeoutMs: 250, maxRetries: 1 });
    expect(await kb.data(kb.api.GET('/api/v2/organization'))).toEqual({ id: 'org-1', name: 'Org' });
    expect(server.seen).toHaveLength(2);
  });

  it("the caller's abort is thrown at once, never retried", async () => {
    server = await scriptedServer(['hang']);
    const kb = client({ timeoutMs: 5000 });
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('user left')), 100);
    await expect(kb.data(kb.api.GET('/api/v2/organization', { signal: controller.signal }))).rejects.toThrow('user left');
    expect(server.seen).toHaveLength(1);
  });

  it('retries a dropped connection, then throws KbConnectionError naming the origin', async () => {
    server = await scriptedServer(['reset', ok]);
    const kb = client({ maxRetries: 1 });
    expect(await kb.data(kb.api.GET('/api/v2/organization'))).toEqual({ id: 'org-1', name: 'Org' });
    expect(server.seen).toHaveLength(2);
    const down = server.baseUrl;
    await server.close();
    server = undefined;
    const error = await new KbClient({ baseUrl: down, apiKey: 'kb_test', maxRetries: 1 }).raw('/api/v2/organization').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(KbConnectionError);
    expect((error as Error).message).toMatch(new RegExp(`^Cannot reach ${down.replace(/[.]/g, '\\.')}: ECONNREFUSED$`));
  });

  it('refuses a negative timeoutMs', () => {
    expect(() => new KbClient({ apiKey: 'kb_test', timeoutMs: -1 })).toThrow(TypeError);
  });
});

describe('typed errors', () => {
  it('a 500 envelope is a KbInternalError; an unknown code a plain KbApiError', () => {
    const response = (status: number) => new Response(null, { status });
    expect(KbApiError.fromBody(response(500), envelope('INTERNAL_ERROR', 'x'))).toBeInstanceOf(KbInternalError);
    const unknown = KbApiError.fromBody(response(418), envelope('TEAPOT', 'x'));
    expect(unknown.constructor).toBe(KbApiError);
    expect(unknown).toMatchObject({ name: 'KbApiError', code: 'TEAPOT' });
  });
});

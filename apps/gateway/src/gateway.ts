import { endHttpServerSpan, observeHttpRequest, startHttpServerSpan } from '@kb/telemetry'; // [telemetry]
import { trace } from '@opentelemetry/api';
import 'reflect-metadata';
import { OpenAPIObject } from '@nestjs/swagger';
import { AppError, connectNats, ensureStream, ErrorCode, Logger, SecretBox, storageConfigFromEnv } from '@kb/common';
import { USAGE_STREAM, USAGE_STREAM_SUBJECTS } from '@kb/events';
import cors from '@fastify/cors';
import { randomUUID } from 'node:crypto';
import { createLocalStorageHandler, LocalObjectStorage } from '@kb/storage';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { SwaggerModule } from '@nestjs/swagger';
import { buildOpenApiDocument } from './common/openapi';
import { WEBHOOK_EVENT_MODELS } from './webhooks/webhook-events';
import { subscribeAccountChanges } from './accounts/account-events';
import { AccountsRepository } from './accounts/accounts.repository';
import { AccountsService } from './accounts/accounts.service';
import { openGatewayDatabase } from './database/database';
import { AppModule } from './app.module';
import { envelopeOf, errorEnvelope } from './common/envelope';
import { toHttpError } from './common/error.filter';
import { GatewayRequest, requestIdFor } from './common/http-context';
import { securityHeaders } from './common/security-headers';
import { Idempotency, IDEMPOTENCY_CLAIM, IDEMPOTENCY_TTL_HOURS } from './common/idempotency';
import { IdempotencyKeysRepository } from './common/idempotency.repository';
import { RateLimiter } from './common/rate-limit';
import { RateLimitWindowsRepository } from './common/rate-limit.repository';
import { createRequestPolicy, isPublicPath, publicRouteOf } from './common/request-policy';
import { UsageRepository } from './usage/usage.repository';
import { consumeTokenUsage, UsageService } from './usage/usage.service';
import { createValidationPipe } from './common/validation';
import { defaultWorkspaceDir, mountWorkspace, workspaceSecurityHeaders } from './workspace';
import { jsonShapeProblem } from './common/body-shape';

/** The request-timeout timer of a request (cleared when its response ends). */
const TIMEOUT_TIMER = Symbol('timeout-timer');
/** The route template of a request (`request.routeOptions` builds a new object at every read). */
const ROUTE = Symbol('route');
type HookedRequest = GatewayRequest & { [TIMEOUT_TIMER]?: NodeJS.Timeout | null; [ROUTE]?: string | null };

/** The path of a request URL (without the query string). */
function pathOf(url: string): string {
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

/**
 * Request bodies of the API are JSON (service-api.md §1): a body with another Content-Type (form,
 * multipart, text…) → 400 VALIDATION_ERROR before any parsing.
 */
function requireJsonBody(request: { headers: Record<string, string | string[] | undefined> }): void {
  const length = request.headers['content-length'];
  const hasBody = (length !== undefined && length !== '0') || request.headers['transfer-encoding'] !== undefined;
  if (!hasBody) return;
  const type = request.headers['content-type'];
  if (typeof type !== 'string' || !JSON_TYPE.test(type)) {
    throw AppError.validation('Unsupported Content-Type: request bodies must be JSON (Content-Type: application/json).');
  }
}

/** Largest request line + headers accepted, in bytes (Node's default `maxHeaderSize`). */
export const MAX_HEADER_BYTES = 16_384;

/**
 * Answers an HTTP-level client error (Node's `clientError`: before any request object exists,
 * so no hook, key or rate limit applies) with the error envelope and closes the connection:
 * headers over {@link MAX_HEADER_BYTES} → 431, a request not received in time → 408 TIMEOUT,
 * anything else (malformed HTTP) → 400. A reset connection gets nothing.
 */
function answerClientError(error: Error & { code?: string }, socket: import('node:net').Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, reason, code, message] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [
          431,
          'Request Header Fields Too Large',
          ErrorCode.VALIDATION_ERROR,
          `The request line and headers exceed ${MAX_HEADER_BYTES} bytes (16 KiB); shorten the URL (query string) or the headers.`,
        ]
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'Request Timeout', ErrorCode.TIMEOUT, 'The request was not received in time.']
        : [400, 'Bad Request', ErrorCode.VALIDATION_ERROR, 'The request is not valid HTTP.'];
  writeRawError(socket, status, reason, code, message);
  socket.destroy();
}

/**
 * Writes one error answer (the envelope, a fresh request id, `Connection: close`) straight on
 * `socket`, for requests that never reach Fastify; `extraHeaders` are added as given.
 */
function writeRawError(socket: import('node:net').Socket, status: number, reason: string, code: ErrorCode, message: string, extraHeaders = ''): void {
  const id = randomUUID();
  const body = JSON.stringify(errorEnvelope(code, message, id));
  if (!socket.writable) return;
  socket.write(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `X-Request-Id: ${id}\r\nX-Content-Type-Options: nosniff\r\nCache-Control: no-store\r\n${extraHeaders}Connection: close\r\n\r\n${body}`,
  );
}

/**
 * Answers a `CONNECT` request (Node hands those to the server's `connect` event, never to Fastify;
 * without a listener it closed the connection with no answer, issue 29 defect 14): 405
 * METHOD_NOT_ALLOWED in the envelope, since the gateway is not a proxy and opens no tunnels.
 * `Allow` lists the methods of the target when it is a path the gateway serves, else every method
 * its routes use ({@link ROUTABLE_METHODS}). Then the connection is closed (a CONNECT's bytes after
 * the request would be tunnel data).
 */
function answerConnect(fastify: FastifyInstance, req: import('node:http').IncomingMessage, socket: import('node:net').Socket): void {
  const target = req.url ?? '';
  const served = target.startsWith('/') ? methodsServing(fastify, target.split('?')[0]) : [];
  const allow = (served.length > 0 ? served : [...ROUTABLE_METHODS]).join(', ');
  writeRawError(
    socket,
    405,
    'Method Not Allowed',
    ErrorCode.METHOD_NOT_ALLOWED,
    `Method CONNECT is not allowed: the gateway is not a proxy; it serves ${allow}.`,
    `Allow: ${allow}\r\n`,
  );
  socket.end();
  socket.once('error', () => undefined);
  setTimeout(() => socket.destroy(), 1000).unref();
}

/**
 * Largest request body the gateway keeps reading (and discards) after refusing it (413, or any
 * answer sent before the body arrived), in bytes. Closing the connection while the client is still
 * sending makes its TCP stack reset the connection, and the client then sees `EPIPE`/`ECONNRESET`
 * instead of the 413 envelope (RFC 9112 section 9.6: a server closing early should keep reading,
 * "lingering close"). Bodies declared larger, or that keep coming past this, are cut off: such a
 * client should send `Expect: 100-continue`, which gets the 413 before any byte of the body.
 */
export const REFUSED_BODY_DRAIN_BYTES = 64 * 1024 * 1024;

/** Requests answered without `100 Continue` (their body never comes): their connection closes after the answer. */
const refusedBeforeContinue = new WeakSet<import('node:http').IncomingMessage>();

/** Longest wait (ms) for a refused body to finish arriving on a connection that closes after the answer. */
export const REFUSED_BODY_LINGER_MS = 10_000;

/**
 * "Lingering close" of `socket` (RFC 9112 section 9.6): when Node closes the connection after the
 * answer (the client sent `Connection: close`), it half-closes instead (our FIN goes out after the
 * answer) and keeps reading what the client still sends, then closes once the client has closed its
 * side or after {@link REFUSED_BODY_LINGER_MS}. Closing at once with unread bytes makes the kernel
 * reset the connection, which can destroy the answer before the client reads it. Node's HTTP
 * server ends a connection with `socket.destroySoon()`; this replaces it for this socket until the
 * request's body has been read (`bodyRead` resolved), after which a plain close is clean again.
 */
function lingerOnClose(socket: import('node:net').Socket, bodyRead: import('node:http').IncomingMessage): void {
  // eslint-disable-next-line @typescript-eslint/unbound-method -- put back on the same socket below
  const original = socket.destroySoon;
  let closing = false;
  socket.destroySoon = () => {
    closing = true;
    socket.destroySoon = original;
    socket.end();
    const timer = setTimeout(() => socket.destroy(), REFUSED_BODY_LINGER_MS);
    timer.unref();
    socket.once('close', () => clearTimeout(timer));
    socket.once('end', () => socket.destroy());
    socket.resume();
  };
  bodyRead.once('end', () => {
    if (!closing) socket.destroySoon = original;
  });
}

/**
 * onSend step of every response: a request whose body has not been fully received has the rest of
 * its body read and dropped (up to {@link REFUSED_BODY_DRAIN_BYTES}) instead of the connection being
 * closed under the client while it still sends, so the client reads the answer (typically the 413
 * envelope) instead of `EPIPE`/`ECONNRESET`. Fastify asks to close the connection after a
 * body-parser error: the connection is kept instead; when it closes anyway (the client asked for
 * `Connection: close`) it lingers ({@link lingerOnClose}). A request refused before `100 Continue`
 * sent no body: its connection is closed after the answer.
 */
function settleUnreadBody(request: FastifyRequest, reply: FastifyReply): void {
  const raw = request.raw;
  if (refusedBeforeContinue.has(raw)) {
    reply.header('connection', 'close');
    return;
  }
  if (raw.complete || raw.destroyed || !raw.socket) return;
  const declared = Number(raw.headers['content-length']);
  if (declared > REFUSED_BODY_DRAIN_BYTES) return;
  reply.removeHeader('connection');
  const socket = raw.socket;
  let received = 0;
  raw.on('data', (chunk: Buffer) => {
    received += chunk.length;
    if (received > REFUSED_BODY_DRAIN_BYTES) socket.destroy();
  });
  raw.resume();
  lingerOnClose(socket, raw);
}

/** Settings of the gateway (validated from the environment by main.ts; README configuration table). */
export interface GatewayConfig {
  DATABASE_URL: string;
  NATS_URL: string;
  DOCUMENTS_GRPC_URL: string;
  INGESTION_GRPC_URL: string;
  RETRIEVAL_GRPC_URL: string;
  CHECK_GRPC_URL: string;
  AGENT_GRPC_URL: string;
  WEBHOOKS_GRPC_URL: string;
  GATEWAY_BODY_LIMIT_BYTES: number;
  GATEWAY_KEY_CACHE_TTL_MS: number;
  GATEWAY_REQUEST_TIMEOUT_MS: number;
  GATEWAY_SHUTDOWN_GRACE_MS: number;
  GATEWAY_CORS_ORIGINS: string;
  /** Streamed chat: an SSE comment after this much silence (ms). */
  CHAT_SSE_HEARTBEAT_MS: number;
  /**
   * Browser origins allowed to use the local driver's presigned URLs (`/storage/v1/…`):
   * comma-separated, `*` for any (the default: the URLs carry their own authorization), empty = none.
   */
  STORAGE_CORS_ORIGINS?: string;
  /**
   * Server key of the webhook secrets (the webhooks service's WEBHOOK_SECRET_KEY): seals the stored
   * idempotent answer of `POST /api/v2/webhooks`, which holds the endpoint's signing secret. Unset:
   * that answer is not stored (a retry with the same Idempotency-Key creates another endpoint).
   */
  WEBHOOK_SECRET_KEY?: string;
  /**
   * Directory of the built review workspace served at /app/ (index.html and assets/); unset: dist/web
   * next to the built gateway (workspace.ts defaultWorkspaceDir).
   */
  GATEWAY_WORKSPACE_DIR?: string;
  /** Object storage settings (sharedEnv.storage). */
  storage: ReturnType<typeof storageConfigFromEnv>;
}

/** A built gateway: the Nest app (initialised, not listening), its routes and OpenAPI document. */
export interface Gateway {
  app: NestFastifyApplication;
  /** Every route registered with Fastify (method, URL pattern such as `/api/v2/projects/:id`). */
  routes: Array<{ method: string; url: string }>;
  openapi: OpenAPIObject;
  /** Graceful stop: drain in-flight requests (bounded by GATEWAY_SHUTDOWN_GRACE_MS), then close NATS and the database. */
  close: () => Promise<void>;
}

/** The gateway's connections and long-lived services (opened by {@link openBackends}). */
interface Backends {
  /** The accounts database (TypeORM, migrations run). */
  database: Awaited<ReturnType<typeof openGatewayDatabase>>;
  /** The idempotency-key table (replays of POST answers). */
  idempotencyKeys: IdempotencyKeysRepository;
  accounts: AccountsService;
  usage: UsageService;
  nc: Awaited<ReturnType<typeof connectNats>>;
  rateLimiter: RateLimiter;
  /** The token-usage consumer (USAGE_STREAM). */
  usageConsumer: Awaited<ReturnType<typeof consumeTokenUsage>>;
  /** The hourly purge timer (idempotency records, old usage events). */
  purge: NodeJS.Timeout;
}

/** Draining state shared by the admission hook and `close` (true once shutdown starts). */
interface Lifecycle {
  draining: boolean;
}

/**
 * What {@link createGateway} serves besides the API. Both need @fastify/static, whose ES-module
 * dependencies Jest's CommonJS loader cannot require: tests that run the gateway in-process turn
 * them off.
 */
export interface GatewayOptions {
  /** The OpenAPI reference at /docs and its document at /docs/openapi.json (default true). */
  serveReference?: boolean;
  /** The review workspace at /app/ (workspace.ts; default: the value of `serveReference`). */
  serveWorkspace?: boolean;
}

/**
 * Builds the gateway: database (migrations), key cache and its NATS invalidation, usage consumer,
 * Nest app on Fastify with the admission hook, security headers, CORS, error envelope, the
 * OpenAPI reference at /docs and the review workspace at /app/ (see {@link GatewayOptions}). The caller listens (`app.listen`) and calls `close` on shutdown.
 * Each step below is a function of this file, in the order it runs.
 * @throws when PostgreSQL or NATS cannot be reached.
 */
export async function createGateway(config: GatewayConfig, logger: Logger, options: GatewayOptions = {}): Promise<Gateway> {
  const backends = await openBackends(config, logger);
  const policy = createRequestPolicy({ accounts: backends.accounts, rateLimiter: backends.rateLimiter, usage: backends.usage });
  const app = await createNestApp(config, logger, backends, createFastifyAdapter(config, policy));
  const fastify = app.getHttpAdapter().getInstance();
  const routes = recordRoutes(fastify);
  declareRequestState(fastify);
  await registerCors(fastify, config);
  const lifecycle: Lifecycle = { draining: false };
  addAdmissionHook(fastify, config, logger, policy, lifecycle);
  fastify.server.on('connect', (req, socket) => answerConnect(fastify, req, socket as import('node:net').Socket));
  addBodyAndResponseHooks(fastify, config, logger, createIdempotency(config, logger, backends));
  await mountLocalStorage(fastify, config);
  if ((options.serveWorkspace ?? options.serveReference) !== false)
    await mountWorkspace(fastify, config.GATEWAY_WORKSPACE_DIR ?? defaultWorkspaceDir(), logger);
  const openapi = mountReference(app, options);
  await app.init();
  let closing: Promise<void> | undefined;
  const close = () => (closing ??= shutdown(app, config, backends, lifecycle));
  return { app, routes, openapi, close };
}

type FastifyInstance = ReturnType<NestFastifyApplication['getHttpAdapter']>['getInstance'] extends () => infer F ? F : never;

/**
 * Opens what the gateway keeps for its lifetime: the accounts database (pool of 20, migrations),
 * the API-key cache and its NATS invalidation, the rate limiter, the usage stream and its
 * consumer, and the hourly purge of idempotency records and old usage events.
 * @throws when PostgreSQL or NATS cannot be reached.
 */
async function openBackends(config: GatewayConfig, logger: Logger): Promise<Backends> {
  const database = await openGatewayDatabase(config.DATABASE_URL, 20);
  const accounts = new AccountsService(new AccountsRepository(database), config.GATEWAY_KEY_CACHE_TTL_MS);
  const usage = new UsageService(new UsageRepository(database));
  const idempotencyKeys = new IdempotencyKeysRepository(database);
  const nc = await connectNats(config.NATS_URL, 'gateway');
  const rateLimiter = new RateLimiter(new RateLimitWindowsRepository(database), nc, logger);
  rateLimiter.start();
  subscribeAccountChanges(nc, accounts, logger);
  await ensureStream(nc, USAGE_STREAM, USAGE_STREAM_SUBJECTS);
  const usageConsumer = await consumeTokenUsage(nc, usage, logger);
  const purge = setInterval(() => {
    void idempotencyKeys.purgeOlderThan(IDEMPOTENCY_TTL_HOURS).catch(() => undefined);
    void usage.purgeOldEvents().catch(() => undefined);
  }, 3600_000);
  purge.unref();
  return { database, idempotencyKeys, accounts, usage, nc, rateLimiter, usageConsumer, purge };
}

/**
 * The Fastify adapter with the gateway's HTTP limits (body, header size, path parameter length),
 * request ids, and the envelope for errors raised before any hook runs (Node's client errors,
 * router errors — the latter after the same admission `policy` as any request).
 */
function createFastifyAdapter(config: GatewayConfig, policy: ReturnType<typeof createRequestPolicy>): FastifyAdapter {
  return new FastifyAdapter({
    bodyLimit: config.GATEWAY_BODY_LIMIT_BYTES,
    // Request line + headers (the URL limit): Node's default, set explicitly so it is documented
    // (docs/gateway.md); larger → 431 in the envelope (clientErrorHandler).
    http: { maxHeaderSize: MAX_HEADER_BYTES },
    // Errors Node's HTTP parser raises before Fastify sees a request (headers over the limit,
    // malformed HTTP, a request not received in time): the envelope, not Fastify's own body.
    clientErrorHandler: answerClientError,
    // Path parameters longer than this → 400 (a UUID is 36 characters).
    routerOptions: { maxParamLength: 1000 },
    // Errors raised by the router before any hook runs (bad percent-encoding, over-long path
    // parameter): the same admission (key, rate-limit headers) and the envelope as any request.
    frameworkErrors: (error: Error, request: FastifyRequest, reply: FastifyReply) => {
      void (async () => {
        const id = String(request.id);
        reply.header('X-Request-Id', id);
        let failure: AppError = AppError.validation(
          (error as { code?: string }).code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'A path parameter is too long.' : 'The URL contains an invalid percent-encoding.',
        );
        try {
          if (!isPublicPath(request.url)) await policy(request, reply);
        } catch (e) {
          failure =
            e instanceof AppError ? e : new AppError(ErrorCode.SERVICE_UNAVAILABLE, 'The gateway cannot check the API key or limits right now. Retry shortly.');
        }
        const mapped = toHttpError(failure, request.method, request.url);
        void reply.status(mapped.status).send(errorEnvelope(mapped.code, mapped.message, id));
      })();
    },
    genReqId: (req: { headers: Record<string, string | string[] | undefined> }) => requestIdFor(req.headers['x-request-id']),
    requestIdHeader: false,
    // Our own hook answers 503 in the envelope while draining (addAdmissionHook).
    return503OnClosing: false,
    forceCloseConnections: 'idle',
  });
}

/** Strict UTF-8 decoder of JSON bodies (`fatal`: a malformed sequence throws instead of becoming U+FFFD). */
const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The JSON body parser: the raw bytes must be valid UTF-8 (RFC 8259 §8.1), else 400
 * VALIDATION_ERROR (`0xC3 0x28` would otherwise be stored as U+FFFD, silently changing the text);
 * then the shape limits of body-shape.ts (nesting, keys per object, members in all: else 400);
 * then Fastify's JSON parser with prototype-poisoning protection (`__proto__`/`constructor` keys → 400).
 * A leading UTF-8 byte order mark is dropped by the decoder.
 */
function strictJsonParser(app: NestFastifyApplication) {
  const fastify = app.getHttpAdapter().getInstance();
  const parseJson = fastify.getDefaultJsonParser('error', 'error');
  return (request: FastifyRequest, body: Buffer, done: (err: Error | null, body?: unknown) => void): void => {
    let text: string;
    try {
      text = STRICT_UTF8.decode(body);
    } catch {
      done(AppError.validation('The request body is not valid UTF-8: JSON text must be encoded as UTF-8.'));
      return;
    }
    // Nesting, keys per object and members in all, in one linear pass before JSON.parse
    // (body-shape.ts): a body of 200,000 keys is refused in about a millisecond instead of
    // blocking the event loop in JSON.parse and validation.
    const shape = jsonShapeProblem(text);
    if (shape !== null) {
      done(AppError.validation(shape));
      return;
    }
    void parseJson(request, text, done);
  };
}

/** The Nest application (AppModule with the backing-service addresses) on `adapter`, with the global validation pipe; not yet initialised. */
async function createNestApp(config: GatewayConfig, logger: Logger, backends: Backends, adapter: FastifyAdapter): Promise<NestFastifyApplication> {
  const app = await NestFactory.create<NestFastifyApplication>(
    AppModule.create({
      database: backends.database,
      logger,
      accounts: backends.accounts,
      addresses: {
        documents: config.DOCUMENTS_GRPC_URL,
        ingestion: config.INGESTION_GRPC_URL,
        retrieval: config.RETRIEVAL_GRPC_URL,
        check: config.CHECK_GRPC_URL,
        agent: config.AGENT_GRPC_URL,
        webhooks: config.WEBHOOKS_GRPC_URL,
      },
      chatHeartbeatMs: config.CHAT_SSE_HEARTBEAT_MS,
      nats: backends.nc,
    }),
    adapter,
    // Nest's own JSON parser decodes the bytes loosely (invalid UTF-8 → U+FFFD): ours instead (strictJsonParser).
    { logger: false, abortOnError: false, bodyParser: false },
  );
  app.useBodyParser('application/json', { bodyLimit: config.GATEWAY_BODY_LIMIT_BYTES }, strictJsonParser(app));
  app.useGlobalPipes(createValidationPipe());
  // Shutdown is driven by runService (SIGTERM/SIGINT → the stop function returned by createGateway).
  return app;
}

/**
 * Every route Fastify registers from now on (Nest controllers at init, plugins), as method and URL
 * pattern: the OpenAPI coverage test compares this list with the published document.
 */
function recordRoutes(fastify: FastifyInstance): Array<{ method: string; url: string }> {
  const routes: Array<{ method: string; url: string }> = [];
  fastify.addHook('onRoute', (r) => {
    for (const method of [r.method].flat()) routes.push({ method: String(method), url: r.url });
  });
  return routes;
}

/**
 * Declares the per-request state up front: properties added to Fastify's request objects on the
 * fly change their hidden class, and every property access in Fastify's own code becomes
 * megamorphic (Fastify's "decorators" guidance).
 */
function declareRequestState(fastify: FastifyInstance): void {
  fastify.decorateRequest('kb', null);
  fastify.decorateRequest(TIMEOUT_TIMER, null);
  fastify.decorateRequest(ROUTE, null);
  fastify.decorateRequest(IDEMPOTENCY_CLAIM, null);
}

/** CORS for the API when GATEWAY_CORS_ORIGINS lists origins (comma-separated, `*` for any; empty = off). */
async function registerCors(fastify: FastifyInstance, config: GatewayConfig): Promise<void> {
  const origins = config.GATEWAY_CORS_ORIGINS.split(',')
    .map((o) => o.trim())
    .filter(Boolean);
  if (origins.length === 0) return;
  await fastify.register(cors, {
    origin: origins.includes('*') ? '*' : origins,
    methods: ['GET', 'POST', 'PATCH', 'DELETE'],
    // An OPTIONS request that is not a full preflight goes on to routing (404 in the envelope),
    // instead of the plugin's plain-text 400.
    strictPreflight: false,
    allowedHeaders: ['Authorization', 'Content-Type', 'Idempotency-Key', 'X-Request-Id'],
    exposedHeaders: ['X-Request-Id', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'Retry-After', 'Idempotent-Replayed'],
    maxAge: 600,
  });
}

/**
 * The `onRequest` hook, admission of every request: timeout timer, request id, security headers,
 * tracing span, 503 while draining, then — outside the public routes (`PUBLIC_ROUTES`) — API key,
 * rate limit and quotas (`policy`, request-policy.ts) and the JSON-only body rule.
 *
 * A request not answered after GATEWAY_REQUEST_TIMEOUT_MS gets 504 TIMEOUT, whatever stage it is
 * in; a response already started (SSE, CSV) is never cut, and the abandoned handler's late result
 * is dropped by Fastify (the reply is sent). Fastify's own `handlerTimeout` is not used: its timer
 * is cleared once a request body has been read, so it never fires for a POST.
 */
function addAdmissionHook(
  fastify: FastifyInstance,
  config: GatewayConfig,
  logger: Logger,
  policy: ReturnType<typeof createRequestPolicy>,
  lifecycle: Lifecycle,
): void {
  // Security headers: helmet's defaults (nosniff, frame denial, HSTS, no referrer…), computed once
  // since they do not depend on the request. The API returns JSON only, so its CSP forbids
  // everything and nothing is cached; /docs has no CSP (the reference UI loads its own scripts);
  // the review workspace at /app/ has its own CSP (workspace.ts workspaceCspDirectives).
  const helmetHeaders = securityHeaders({ contentSecurityPolicy: false, crossOriginResourcePolicy: { policy: 'same-site' } });
  const apiHeaders = { ...helmetHeaders, 'content-security-policy': "default-src 'none'; frame-ancestors 'none'", 'cache-control': 'no-store' };
  const workspaceHeaders = workspaceSecurityHeaders(config.storage);
  const timeoutMessage = `The request did not complete within ${Math.round(config.GATEWAY_REQUEST_TIMEOUT_MS / 1000)} seconds. Retry later.`;
  const timeoutMs = config.GATEWAY_REQUEST_TIMEOUT_MS;
  fastify.addHook('onRequest', async (request, reply) => {
    const state = request as HookedRequest;
    state[TIMEOUT_TIMER] = setTimeout(() => {
      if (reply.sent || reply.raw.headersSent) return;
      void reply.status(504).send(errorEnvelope(ErrorCode.TIMEOUT, timeoutMessage, String(request.id)));
    }, timeoutMs);
    const path = pathOf(request.url);
    const publicRoute = publicRouteOf(path);
    const probe = publicRoute?.kind === 'probe';
    reply.header('x-request-id', request.id);
    reply.headers(!publicRoute || probe ? apiHeaders : publicRoute.kind === 'workspace' ? workspaceHeaders : helmetHeaders);
    const route = request.routeOptions.url;
    state[ROUTE] = route;
    // [telemetry] the SERVER span; the route template names it (bounded cardinality).
    state.kb = { principal: undefined, span: probe ? undefined : startHttpServerSpan(request.method, route ?? 'unmatched', path, request.headers) };
    if (lifecycle.draining) {
      reply.header('Connection', 'close');
      throw new AppError(ErrorCode.SERVICE_UNAVAILABLE, 'The gateway is shutting down. Retry; another replica will answer.');
    }
    if (!publicRoute) {
      try {
        await policy(request, reply);
      } catch (e) {
        if (e instanceof AppError) throw e;
        logger.error({ err: e, request_id: request.id }, 'admission check failed');
        throw new AppError(ErrorCode.SERVICE_UNAVAILABLE, 'The gateway cannot check the API key or limits right now. Retry shortly.');
      }
    }
    // A path the gateway serves, with another method: 405 and `Allow` (RFC 9110 section 15.5.6),
    // after the key and limits like any answer; a path it does not serve stays 404. A request that
    // a parameter route took (`GET /api/v2/documents/:id` for `GET /api/v2/documents/process`)
    // while a more specific route serves that path with other methods is such a request too.
    if (request.is404 || route?.includes(':')) refuseUnservedMethod(fastify, request.method, path, reply);
    if (!publicRoute) requireJsonBody(request);
  });
}

/**
 * The methods tried for the `Allow` header of a 405: those the gateway's routes use (Fastify adds
 * HEAD to every GET route). OPTIONS is answered by the CORS plugin (GATEWAY_CORS_ORIGINS) or not
 * at all, so it is never listed.
 */
const ROUTABLE_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/**
 * The methods `path` is served with, in {@link ROUTABLE_METHODS} order, from Fastify's router:
 * only routes with a fixed pattern (`/api/v2/projects/:id`) count, and of those the most specific
 * (fewest parameters): `/api/v2/documents/process` is served by POST, although GET
 * `/api/v2/documents/:id` would take it as an id, so its `Allow` is the documented `POST`.
 * Catch-all routes (`/app/*`, `/storage/v1/*`, the CORS plugin's `OPTIONS *`) are left out: they
 * have their own answers to other methods. An empty list means the path is unknown (404).
 */
export function methodsServing(fastify: Pick<FastifyInstance, 'findRoute'>, path: string): string[] {
  const matches = ROUTABLE_METHODS.flatMap((method) => {
    const found = fastify.findRoute({ method, url: path });
    const params = (found?.params ?? {}) as Record<string, string | undefined>;
    return found !== null && params['*'] === undefined ? [{ method, params: Object.keys(params).length }] : [];
  });
  const fewest = Math.min(...matches.map((m) => m.params));
  return matches.filter((m) => m.params === fewest).map((m) => m.method);
}

/**
 * For a request that matched no route, or only a parameter route: when `path` is served with
 * other methods only ({@link methodsServing}), sets `Allow` on `reply` and throws 405
 * METHOD_NOT_ALLOWED (the error envelope, docs/gateway.md); else returns, and the request goes on
 * (to its route, or to the 404 NOT_FOUND).
 * @throws AppError METHOD_NOT_ALLOWED
 */
function refuseUnservedMethod(fastify: FastifyInstance, method: string, path: string, reply: FastifyReply): void {
  const allowed = methodsServing(fastify, path);
  if (allowed.length === 0 || allowed.includes(method)) return;
  reply.header('allow', allowed.join(', '));
  throw new AppError(ErrorCode.METHOD_NOT_ALLOWED, `Method ${method} is not allowed on ${path}; it serves ${allowed.join(', ')}.`);
}

/**
 * The idempotency store of POST requests. With WEBHOOK_SECRET_KEY its stored answers of
 * `POST /api/v2/webhooks` are sealed; without it those answers are not kept (warned once).
 */
function createIdempotency(config: GatewayConfig, logger: Logger, backends: Backends): Idempotency {
  const idempotency = new Idempotency(backends.idempotencyKeys, logger, config.WEBHOOK_SECRET_KEY ? new SecretBox(config.WEBHOOK_SECRET_KEY) : null);
  if (!config.WEBHOOK_SECRET_KEY)
    logger.warn('WEBHOOK_SECRET_KEY is not set: answers of POST /api/v2/webhooks (they hold a signing secret) are not kept for Idempotency-Key replays');
  return idempotency;
}

/**
 * The hooks after admission, in the order Fastify runs them: body checks and idempotency claims
 * (`preHandler`), the success envelope (`preSerialization`), unread-body settling and storing a
 * claimed key's response (`onSend`), the `Expect: 100-continue` answer, the access log, metrics and
 * span end (`onResponse`), and the error envelope for Fastify's own errors.
 */
function addBodyAndResponseHooks(fastify: FastifyInstance, config: GatewayConfig, logger: Logger, idempotency: Idempotency): void {
  // Once the body is parsed, before the handler (and Nest's validation pipe) runs:
  // - JSON bodies must be objects (nesting and size were bounded before parsing, jsonShapeProblem):
  //   arrays or scalars would otherwise reach validation as if they were DTOs (texts are checked
  //   by the validation pipe, once unknown keys are dropped);
  // - idempotency keys of POST requests are claimed, or their stored response replayed.
  fastify.addHook('preHandler', (request, reply, done) => {
    const body = request.body;
    if (body !== undefined && !isPublicPath(request.url)) {
      if (body === null || typeof body !== 'object' || Array.isArray(body)) return done(AppError.validation('The request body must be a JSON object.'));
      // Texts holding NUL or a lone surrogate are refused by the validation pipe, after unknown
      // keys are dropped (createValidationPipe): a key the API does not read is never refused for its content.
    }
    if (request.method !== 'POST' || request.headers['idempotency-key'] === undefined) return done();
    // A replay has been sent by the hook: the handler must not run (no `done`).
    idempotency.preHandler(request, reply).then(() => (reply.sent ? undefined : done()), done);
  });
  // The success envelope around every handler result that is not already one.
  fastify.addHook('preSerialization', (request, _reply, payload, done) => done(null, envelopeOf(payload, String(request.id))));
  fastify.addHook('onSend', (request, reply, _payload, done) => {
    settleUnreadBody(request, reply);
    done();
  });
  // `Expect: 100-continue` (RFC 9110 section 10.1.1): an API request whose declared body is over
  // the limit is answered 413 at once, before the client sends the body; others get `100 Continue`.
  // Presigned storage uploads (larger than the API limit) always continue: their handler decides.
  fastify.server.on('checkContinue', (req, res) => {
    if (publicRouteOf(req.url ?? '')?.kind !== 'storage' && Number(req.headers['content-length']) > config.GATEWAY_BODY_LIMIT_BYTES)
      refusedBeforeContinue.add(req);
    else res.writeContinue();
    fastify.server.emit('request', req, res);
  });
  // The response of a claimed idempotency key is stored.
  fastify.addHook('onSend', (request, reply, payload, done) => {
    if (!idempotency.claimed(request)) return done();
    idempotency.onSend(request, reply, payload).then(() => done(), done);
  });
  // One structured log line per request, metrics, end of the span.
  fastify.addHook('onResponse', (request, reply, done) => {
    const state = request as HookedRequest;
    clearTimeout(state[TIMEOUT_TIMER] ?? undefined);
    if (idempotency.claimed(request)) void idempotency.onResponse(request);
    const route = state[ROUTE] ?? undefined;
    const span = state.kb?.span;
    const ids = span?.spanContext();
    logger.info(
      {
        request_id: request.id,
        org_id: (request as GatewayRequest).kb?.principal?.orgId,
        method: request.method,
        route: route ?? pathOf(request.url),
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
        ...(ids && trace.isSpanContextValid(ids) ? { trace_id: ids.traceId, span_id: ids.spanId } : {}),
      },
      'request',
    );
    // [telemetry] the route template only (unknown URLs share one label value: bounded cardinality)
    observeHttpRequest(request.method, route ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
    if (span) endHttpServerSpan(span, reply.statusCode);
    done();
  });
  // Errors raised by Fastify itself (body parsing, body too large) use the same envelope.
  fastify.setErrorHandler((error, request, reply) => {
    const mapped = toHttpError(error, request.method, request.url);
    if (mapped.unexpected) logger.error({ err: error, request_id: request.id }, 'unexpected error');
    void reply.status(mapped.status).send(errorEnvelope(mapped.code, mapped.message, String(request.id)));
  });
}

/**
 * With the local storage driver, serves its presigned URLs at `/storage/v1/*`, outside /api/v2,
 * without bearer auth: their signature and expiry are the authorization (service-api.md §5; a
 * public route of `PUBLIC_ROUTES`). Browser CORS there follows STORAGE_CORS_ORIGINS (default `*`).
 */
async function mountLocalStorage(fastify: FastifyInstance, config: GatewayConfig): Promise<void> {
  const storageConfig = config.storage;
  if (storageConfig.driver !== 'local') return;
  const storage = new LocalObjectStorage({
    ...storageConfig.local,
    corsOrigins: (config.STORAGE_CORS_ORIGINS ?? '*')
      .split(',')
      .map((o) => o.trim())
      .filter(Boolean),
  });
  await storage.ensureReady();
  const handler = createLocalStorageHandler(storage);
  await fastify.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_req, _payload, done) => done(null));
    scope.route({
      // OPTIONS: CORS preflights of browser uploads, answered by the storage handler with
      // STORAGE_CORS_ORIGINS (the API's CORS settings do not apply here).
      method: ['GET', 'HEAD', 'PUT', 'OPTIONS'],
      url: '/storage/v1/*',
      config: { cors: false },
      handler: async (request, reply) => {
        // The handler writes the raw response: it takes the headers set so far (request id, security headers).
        for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) reply.raw.setHeader(name, value);
        reply.hijack();
        const handled = await handler(request.raw, reply.raw);
        if (!handled) {
          reply.raw.statusCode = 404;
          reply.raw.setHeader('Content-Type', 'application/json');
          reply.raw.end(JSON.stringify(errorEnvelope('NOT_FOUND', 'Not found.', String(request.id))));
        }
      },
    });
  });
}

/**
 * Builds the OpenAPI document of the app's controllers and, unless `options.serveReference` is
 * false, serves the browsable reference at `/docs` and the document at `/docs/openapi.json`. The
 * reference needs @fastify/static (its dependencies are ES modules); tests that run the gateway
 * in-process inside Jest's CommonJS loader skip it (GatewayOptions).
 */
function mountReference(app: NestFastifyApplication, options: { serveReference?: boolean }): OpenAPIObject {
  const openapi = buildOpenApiDocument(app, WEBHOOK_EVENT_MODELS);
  if (options.serveReference !== false) SwaggerModule.setup('docs', app, openapi, { jsonDocumentUrl: 'docs/openapi.json' });
  return openapi;
}

/**
 * Graceful stop: stop accepting, answer new requests on open connections with 503 (draining), let
 * in-flight requests finish (bounded by GATEWAY_SHUTDOWN_GRACE_MS), then stop the usage consumer,
 * flush usage, drain NATS and close the database.
 */
async function shutdown(app: NestFastifyApplication, config: GatewayConfig, backends: Backends, lifecycle: Lifecycle): Promise<void> {
  lifecycle.draining = true;
  clearInterval(backends.purge);
  backends.rateLimiter.stop();
  const grace = new Promise<void>((resolve) => setTimeout(resolve, config.GATEWAY_SHUTDOWN_GRACE_MS).unref());
  await Promise.race([app.close(), grace]);
  await backends.usageConsumer.stop().catch(() => undefined);
  await backends.usage.flush().catch(() => undefined);
  await backends.nc.drain().catch(() => undefined);
  await backends.database.destroy();
}

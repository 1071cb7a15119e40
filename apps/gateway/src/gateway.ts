import { observeHttpRequest } from '@kb/telemetry'; // [telemetry]
import 'reflect-metadata';
import { OpenAPIObject } from '@nestjs/swagger';
import { AppError, connectNats, ensureStream, ErrorCode, Logger, storageConfigFromEnv } from '@kb/common';
import { USAGE_STREAM, USAGE_STREAM_SUBJECTS } from '@kb/events';
import cors from '@fastify/cors';
import helmet from '@fastify/helmet';
import type { Pool } from 'pg';
import { createLocalStorageHandler, LocalObjectStorage } from '@kb/storage';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { SwaggerModule } from '@nestjs/swagger';
import { buildOpenApiDocument } from './common/openapi';
import { subscribeAccountChanges } from './accounts/account-events';
import { AccountsService, openAccountsDatabase } from './accounts/accounts.service';
import { AppModule } from './app.module';
import { errorEnvelope } from './common/envelope';
import { toHttpError } from './common/error.filter';
import { requestIdFor } from './common/http-context';
import { IdempotencyInterceptor } from './common/idempotency';
import { RateLimiter } from './common/rate-limit';
import { createRequestPolicy, isPublicPath, setResponseHeader } from './common/request-policy';
import { consumeTokenUsage, UsageService } from './usage/usage.service';
import { createValidationPipe } from './common/validation';

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

/** Deepest nesting of objects/arrays accepted in a JSON body. */
const MAX_JSON_DEPTH = 32;

/** Nesting depth of a parsed JSON value, counting stops just past `limit` (iterative, no recursion). */
function jsonDepth(value: unknown, limit: number): number {
  let max = 0;
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (d > max) max = d;
    if (max > limit) return max;
    for (const child of Object.values(v as object)) stack.push([child, d + 1]);
  }
  return max;
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
  GATEWAY_BODY_LIMIT_BYTES: number;
  GATEWAY_KEY_CACHE_TTL_MS: number;
  GATEWAY_REQUEST_TIMEOUT_MS: number;
  GATEWAY_SHUTDOWN_GRACE_MS: number;
  GATEWAY_CORS_ORIGINS: string;
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

/**
 * Builds the gateway: database (migrations), key cache and its NATS invalidation, usage consumer,
 * Nest app on Fastify with the admission hook, security headers, CORS, error envelope and the
 * OpenAPI reference at /docs (unless `options.serveReference` is false). The caller listens (`app.listen`) and calls `close` on shutdown.
 * @throws when PostgreSQL or NATS cannot be reached.
 */
export async function createGateway(config: GatewayConfig, logger: Logger, options: { serveReference?: boolean } = {}): Promise<Gateway> {
  const database = await openAccountsDatabase(config.DATABASE_URL, 20);
  const accounts = new AccountsService(database, config.GATEWAY_KEY_CACHE_TTL_MS);
  const usage = new UsageService(database);
  const rateLimiter = new RateLimiter((database.driver as unknown as { master: Pool }).master);
  const nc = await connectNats(config.NATS_URL, 'gateway');
  subscribeAccountChanges(nc, accounts, logger);
  await ensureStream(nc, USAGE_STREAM, USAGE_STREAM_SUBJECTS);
  const usageConsumer = await consumeTokenUsage(nc, usage, logger);
  const purge = setInterval(() => {
    void IdempotencyInterceptor.purge(database).catch(() => undefined);
    void usage.purgeOldEvents().catch(() => undefined);
  }, 3600_000);
  purge.unref();

  const policy = createRequestPolicy({ accounts, rateLimiter, usage });
  const adapter = new FastifyAdapter({
    bodyLimit: config.GATEWAY_BODY_LIMIT_BYTES,
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
          failure = e instanceof AppError ? e : new AppError(ErrorCode.SERVICE_UNAVAILABLE, 'The gateway cannot check the API key or limits right now. Retry shortly.');
        }
        const mapped = toHttpError(failure, request.method, request.url);
        void reply.status(mapped.status).send(errorEnvelope(mapped.code, mapped.message, id));
      })();
    },
    genReqId: (req: { headers: Record<string, string | string[] | undefined> }) => requestIdFor(req.headers['x-request-id']),
    requestIdHeader: false,
    // Our own hook answers 503 in the envelope while draining (below).
    return503OnClosing: false,
    forceCloseConnections: 'idle',
  });
  const app = await NestFactory.create<NestFastifyApplication>(
    AppModule.create({
      database,
      logger,
      accounts,
      http: { requestTimeoutMs: config.GATEWAY_REQUEST_TIMEOUT_MS },
      addresses: {
        documents: config.DOCUMENTS_GRPC_URL,
        ingestion: config.INGESTION_GRPC_URL,
        retrieval: config.RETRIEVAL_GRPC_URL,
        check: config.CHECK_GRPC_URL,
        agent: config.AGENT_GRPC_URL,
      },
    }),
    adapter,
    { logger: false, abortOnError: false },
  );
  app.useGlobalPipes(createValidationPipe());
  // Shutdown is driven by runService (SIGTERM/SIGINT → the stop function returned below).

  const fastify = app.getHttpAdapter().getInstance();
  // Every route Fastify registers (Nest controllers at init, plugins): the OpenAPI coverage test
  // compares this list with the published document.
  const routes: Array<{ method: string; url: string }> = [];
  fastify.addHook('onRoute', (r) => {
    for (const method of [r.method].flat()) routes.push({ method: String(method), url: r.url });
  });
  let draining = false;
  // Security headers (helmet defaults: nosniff, frame denial, HSTS, no referrer…). The API returns
  // JSON only, so its CSP forbids everything; /docs keeps helmet's default CSP for the reference UI.
  await fastify.register(helmet, { global: true, contentSecurityPolicy: false, crossOriginResourcePolicy: { policy: 'same-site' } });
  const origins = config.GATEWAY_CORS_ORIGINS.split(',').map((o) => o.trim()).filter(Boolean);
  if (origins.length > 0) {
    await fastify.register(cors, {
      origin: origins.includes('*') ? '*' : origins,
      methods: ['GET', 'POST', 'PATCH', 'DELETE'],
      allowedHeaders: ['Authorization', 'Content-Type', 'Idempotency-Key', 'X-Request-Id'],
      exposedHeaders: ['X-Request-Id', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'Retry-After', 'Idempotent-Replayed'],
      maxAge: 600,
    });
  }
  fastify.addHook('onRequest', async (request, reply) => {
    setResponseHeader(reply, 'X-Request-Id', String(request.id));
    if (draining) {
      reply.header('Connection', 'close');
      throw new AppError(ErrorCode.SERVICE_UNAVAILABLE, 'The gateway is shutting down. Retry; another replica will answer.');
    }
    try {
      await policy(request, reply);
    } catch (e) {
      if (e instanceof AppError) throw e;
      logger.error({ err: e, request_id: request.id }, 'admission check failed');
      throw new AppError(ErrorCode.SERVICE_UNAVAILABLE, 'The gateway cannot check the API key or limits right now. Retry shortly.');
    }
    if (!isPublicPath(request.url)) requireJsonBody(request);
  });
  // JSON bodies must be objects of bounded nesting: arrays, scalars or 1000-deep nesting would
  // otherwise reach validation (and its recursion) as if they were DTOs.
  fastify.addHook('preValidation', async (request) => {
    const body = request.body;
    if (body === undefined || isPublicPath(request.url)) return;
    if (body === null || typeof body !== 'object' || Array.isArray(body)) throw AppError.validation('The request body must be a JSON object.');
    if (jsonDepth(body, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) throw AppError.validation(`The request body is nested deeper than ${MAX_JSON_DEPTH} levels.`);
  });
  // Every response carries the request id; one structured log line per request.
  fastify.addHook('onSend', async (request, reply) => {
    reply.header('X-Request-Id', request.id);
    if (!isPublicPath(request.url) || request.url.startsWith('/readyz') || request.url.startsWith('/healthz')) {
      reply.header('Content-Security-Policy', "default-src 'none'; frame-ancestors 'none'");
      reply.header('Cache-Control', 'no-store');
    }
  });
  fastify.addHook('onResponse', async (request, reply) => {
    const kb = (request as { kb?: { principal?: { orgId: string } } }).kb;
    logger.info(
      { request_id: request.id, org_id: kb?.principal?.orgId, method: request.method, route: request.routeOptions?.url ?? request.url.split('?')[0], status: reply.statusCode, ms: Math.round(reply.elapsedTime) },
      'request',
    );
    // [telemetry] the route template only (unknown URLs share one label value: bounded cardinality)
    observeHttpRequest(request.method, request.routeOptions?.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
  });
  // Errors raised by Fastify itself (body parsing, body too large) use the same envelope.
  fastify.setErrorHandler((error, request, reply) => {
    const mapped = toHttpError(error, request.method, request.url);
    if (mapped.unexpected) logger.error({ err: error, request_id: request.id }, 'unexpected error');
    void reply.status(mapped.status).send(errorEnvelope(mapped.code, mapped.message, String(request.id)));
  });

  const storageConfig = config.storage;
  if (storageConfig.driver === 'local') {
    // Presigned URLs of the local storage driver are served here, outside /api/v2, without
    // bearer auth: their signature and expiry are the authorization (service-api.md §5).
    const storage = new LocalObjectStorage(storageConfig.local);
    await storage.ensureReady();
    const handler = createLocalStorageHandler(storage);
    await fastify.register(async (scope) => {
      scope.removeAllContentTypeParsers();
      scope.addContentTypeParser('*', (_req, _payload, done) => done(null));
      scope.route({
        method: ['GET', 'HEAD', 'PUT'],
        url: '/storage/v1/*',
        handler: async (request, reply) => {
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

  const openapi = buildOpenApiDocument(app);
  // The browsable reference needs @fastify/static (ESM); tests that run the gateway in-process
  // inside Jest's CommonJS loader skip it (`serveReference: false`).
  if (options.serveReference !== false) SwaggerModule.setup('docs', app, openapi, { jsonDocumentUrl: 'docs/openapi.json' });

  await app.init();
  let closing: Promise<void> | undefined;
  const close = () => (closing ??= shutdown());
  const shutdown = async () => {
    // Drain: stop accepting, answer new requests on open connections with 503, let in-flight
    // requests finish (bounded by GATEWAY_SHUTDOWN_GRACE_MS), then close the rest.
    draining = true;
    clearInterval(purge);
    const grace = new Promise<void>((resolve) => setTimeout(resolve, config.GATEWAY_SHUTDOWN_GRACE_MS).unref());
    await Promise.race([app.close(), grace]);
    await usageConsumer.stop().catch(() => undefined);
    await usage.flush().catch(() => undefined);
    await nc.drain().catch(() => undefined);
    await database.destroy();
  };
  return { app, routes, openapi, close };
}

import 'reflect-metadata';
import { AppError, connectNats, createLogger, ensureStream, env, ErrorCode, loadConfig, runService, sharedEnv, storageConfigFromEnv } from '@kb/common';
import { USAGE_STREAM, USAGE_STREAM_SUBJECTS } from '@kb/events';
import cors from '@fastify/cors';
import helmet from '@fastify/helmet';
import type { Pool } from 'pg';
import { z } from 'zod';
import { createLocalStorageHandler, LocalObjectStorage } from '@kb/storage';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import { subscribeAccountChanges } from './accounts/account-events';
import { AccountsService, DEFAULT_KEY_CACHE_TTL_MS, openAccountsDatabase } from './accounts/accounts.service';
import { AppModule } from './app.module';
import { errorEnvelope } from './common/envelope';
import { toHttpError } from './common/error.filter';
import { requestIdFor } from './common/http-context';
import { IdempotencyInterceptor } from './common/idempotency';
import { RateLimiter } from './common/rate-limit';
import { createRequestPolicy, isPublicPath } from './common/request-policy';
import { consumeTokenUsage, UsageService } from './usage/usage.service';
import { createValidationPipe } from './common/validation';

const logger = createLogger('gateway');

runService(logger, async () => {
  const config = loadConfig({
    ...sharedEnv.database,
    ...sharedEnv.clients,
    ...sharedEnv.storage,
    ...sharedEnv.nats,
    INGESTION_GRPC_URL: env.string('127.0.0.1:50052'),
    GATEWAY_HOST: env.string('0.0.0.0'),
    GATEWAY_PORT: env.port(8080),
    /** Largest JSON body accepted (bytes); larger → 413. */
    GATEWAY_BODY_LIMIT_BYTES: env.int(10 * 1024 * 1024),
    /** How long a key lookup is cached per replica (ms); revocations invalidate it at once via NATS. */
    GATEWAY_KEY_CACHE_TTL_MS: env.int(DEFAULT_KEY_CACHE_TTL_MS),
    /** A handler that has not started answering after this long → 504 TIMEOUT (ms). Verify may take 5 min. */
    GATEWAY_REQUEST_TIMEOUT_MS: env.int(330_000),
    /** On SIGTERM, in-flight requests get this long to finish (ms) before the process exits. */
    GATEWAY_SHUTDOWN_GRACE_MS: env.int(10_000),
    /** Browser origins allowed by CORS: comma-separated list, `*` for any, empty = CORS off. */
    GATEWAY_CORS_ORIGINS: z.string().default(''),
  });
  const database = await openAccountsDatabase(config.DATABASE_URL);
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

  const adapter = new FastifyAdapter({
    bodyLimit: config.GATEWAY_BODY_LIMIT_BYTES,
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
  const policy = createRequestPolicy({ accounts, rateLimiter, usage });
  fastify.addHook('onRequest', async (request, reply) => {
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
  });
  // Errors raised by Fastify itself (body parsing, body too large) use the same envelope.
  fastify.setErrorHandler((error, request, reply) => {
    const mapped = toHttpError(error, request.method, request.url);
    if (mapped.unexpected) logger.error({ err: error, request_id: request.id }, 'unexpected error');
    void reply.status(mapped.status).send(errorEnvelope(mapped.code, mapped.message, String(request.id)));
  });

  const storageConfig = storageConfigFromEnv(config);
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

  const openapi = SwaggerModule.createDocument(
    app,
    new DocumentBuilder()
      .setTitle('Knowledge Project and Compliance Service API')
      .setVersion('2')
      .setDescription('Projects, documents, compliance checks and grounded answers with citations. All endpoints under /api/v2 require `Authorization: Bearer <API_KEY>`.')
      .addBearerAuth()
      .build(),
  );
  SwaggerModule.setup('docs', app, openapi, { jsonDocumentUrl: 'docs/openapi.json' });

  await app.listen(config.GATEWAY_PORT, config.GATEWAY_HOST);
  logger.info({ port: config.GATEWAY_PORT }, 'gateway listening');
  return async () => {
    // Drain: stop accepting, answer new requests on open connections with 503, let in-flight
    // requests finish (bounded by GATEWAY_SHUTDOWN_GRACE_MS), then close the rest.
    draining = true;
    clearInterval(purge);
    const grace = new Promise<void>((resolve) => setTimeout(resolve, config.GATEWAY_SHUTDOWN_GRACE_MS).unref());
    await Promise.race([app.close(), grace]);
    await usageConsumer.stop().catch(() => undefined);
    await nc.drain().catch(() => undefined);
    await database.destroy();
  };
});

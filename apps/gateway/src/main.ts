import '@kb/telemetry/register'; // [telemetry] must stay the first import (instruments grpc/http)
import 'reflect-metadata';
import { createLogger, env, loadConfig, runService, sharedEnv, storageConfigFromEnv } from '@kb/common';
import { createLocalStorageHandler, LocalObjectStorage } from '@kb/storage';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import { openAccountsDatabase } from './accounts/accounts.service';
import { AppModule } from './app.module';
import { errorEnvelope } from './common/envelope';
import { toHttpError } from './common/error.filter';
import { requestIdFor } from './common/http-context';
import { createValidationPipe } from './common/validation';
import { observeHttpRequest, startMetricsServer } from '@kb/telemetry'; // [telemetry]

const logger = createLogger('gateway');

runService(logger, async () => {
  const config = loadConfig({
    ...sharedEnv.telemetry, // [telemetry]
    /** Port of the Prometheus /metrics listener (never the public port). */
    GATEWAY_METRICS_PORT: env.port(9460), // [telemetry]
    ...sharedEnv.database,
    ...sharedEnv.clients,
    ...sharedEnv.storage,
    INGESTION_GRPC_URL: env.string('127.0.0.1:50052'),
    GATEWAY_HOST: env.string('0.0.0.0'),
    GATEWAY_PORT: env.port(8080),
    /** Largest JSON body accepted (bytes); larger → 413. */
    GATEWAY_BODY_LIMIT_BYTES: env.int(10 * 1024 * 1024),
    /** Streamed chat: an SSE comment after this much silence (read by ChatController). */
    CHAT_SSE_HEARTBEAT_MS: env.int(15_000),
  });
  const database = await openAccountsDatabase(config.DATABASE_URL);

  const adapter = new FastifyAdapter({
    bodyLimit: config.GATEWAY_BODY_LIMIT_BYTES,
    genReqId: (req: { headers: Record<string, string | string[] | undefined> }) => requestIdFor(req.headers['x-request-id']),
    requestIdHeader: false,
    return503OnClosing: true,
  });
  const app = await NestFactory.create<NestFastifyApplication>(
    AppModule.create({
      database,
      logger,
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
  app.enableShutdownHooks();

  const fastify = app.getHttpAdapter().getInstance();
  // Every response carries the request id; one structured log line per request.
  fastify.addHook('onSend', async (request, reply) => {
    reply.header('X-Request-Id', request.id);
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
  // [telemetry] Prometheus /metrics on its own port
  const metricsServer = await startMetricsServer({ service: 'gateway', enabled: config.METRICS_ENABLED, host: config.METRICS_HOST, port: config.GATEWAY_METRICS_PORT });
  return async () => {
    await metricsServer.close(); // [telemetry]
    await app.close();
    await database.destroy();
  };
});

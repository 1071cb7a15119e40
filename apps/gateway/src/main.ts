import { startTracing } from '@kb/telemetry'; // [telemetry]
import 'reflect-metadata';
import { bootService, env, sharedEnv, storageConfigFromEnv } from '@kb/common';
import { z } from 'zod';
import { DEFAULT_KEY_CACHE_TTL_MS } from './accounts/accounts.service';
import { createGateway } from './gateway';

// [telemetry] The gateway propagates the trace explicitly (its spans and gRPC metadata), without
// the async-hooks context manager or auto-instrumentation (libs/telemetry startTracing).
startTracing(process.env.OTEL_SERVICE_NAME || 'gateway', process.env, { propagation: 'explicit' });

/** The gateway's settings (README "Configuration"); bootService validates them with its own at start. */
const gatewayEnv = {
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
  /** Browser origins allowed to use the local storage driver's presigned URLs: comma-separated, `*` for any, empty = none. */
  STORAGE_CORS_ORIGINS: z.string().default('*'),
  /** The webhooks service's server key: seals the kept idempotent answer of POST /api/v2/webhooks (it holds a signing secret). */
  WEBHOOK_SECRET_KEY: z.string().min(32, 'WEBHOOK_SECRET_KEY must be at least 32 characters (e.g. `openssl rand -hex 32`)').optional(),
  /** Directory of the built review workspace served at /app/; unset: dist/web next to the built gateway. */
  GATEWAY_WORKSPACE_DIR: z.string().min(1).optional(),
  /** Streamed chat: an SSE comment after this much silence (ms; passed to ChatController). */
  CHAT_SSE_HEARTBEAT_MS: env.int(15_000),
};

// Buffered logger: one access-log line per request (LoggerOptions.buffered).
bootService({ name: 'gateway', metricsPort: 9460, env: gatewayEnv, logger: { buffered: true } }, async ({ logger, config }) => {
  const gateway = await createGateway({ ...config, storage: storageConfigFromEnv(config) }, logger);
  await gateway.app.listen(config.GATEWAY_PORT, config.GATEWAY_HOST);
  logger.info({ port: config.GATEWAY_PORT }, 'gateway listening');
  return () => gateway.close();
});

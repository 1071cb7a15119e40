import '@kb/telemetry/register'; // [telemetry] must stay the first import (instruments grpc/http)
import { bootService, env, runConsumer, sharedEnv } from '@kb/common';
import { WEBHOOK_FANOUT_PARTITIONS, WEBHOOKS_STREAM, WEBHOOKS_STREAM_SUBJECTS, WebhookEventMessage, WebhookSubjects } from '@kb/events';
import { webhooksV1 } from '@kb/proto';
import { metrics } from '@kb/telemetry'; // [telemetry]
import { z } from 'zod';
import { openWebhooksDatabase } from './database/database';
import { Dispatcher } from './delivery/dispatcher';
import { SecretBox } from './endpoints/secrets';
import { WebhooksRepository } from './endpoints/webhooks.repository';
import { WebhooksService } from './endpoints/webhooks.service';
import { webhooksGrpcHandlers } from './grpc/webhooks.grpc-controller';

/** The webhooks service's settings (README "Configuration"); bootService validates them with its own at start. */
const webhooksEnv = {
  ...sharedEnv.database,
  ...sharedEnv.nats,
  /** Server key sealing endpoint secrets at rest (AES-256-GCM); at least 32 characters, e.g. `openssl rand -hex 32`. */
  WEBHOOK_SECRET_KEY: z.string().min(32, 'WEBHOOK_SECRET_KEY must be at least 32 characters (e.g. `openssl rand -hex 32`)').optional(),
  /** Deliver to loopback, link-local and private addresses (the local stack sets it). */
  WEBHOOK_ALLOW_PRIVATE: env.bool(false),
  /** Accept plain http:// endpoint URLs (the local stack sets it). */
  WEBHOOK_ALLOW_HTTP: env.bool(false),
  /** One attempt's limit (ms): a 2xx must arrive within it. */
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(10_000).default(10_000),
  /** Delay after the first failed attempt (ms); doubles after each failure. */
  WEBHOOK_RETRY_BASE_MS: z.coerce.number().int().min(10).default(5_000),
  /** Longest delay between two attempts (ms). */
  WEBHOOK_RETRY_MAX_DELAY_MS: z.coerce.number().int().min(10).default(3_600_000),
  /** How long a delivery is retried before it is `failed` (ms); at least 24 h in production. */
  WEBHOOK_RETRY_WINDOW_MS: z.coerce
    .number()
    .int()
    .min(1000)
    .default(24 * 3_600_000),
  /** Attempts in flight at once in this process. */
  WEBHOOK_CONCURRENCY: z.coerce.number().int().min(1).max(256).default(16),
  /** How often due retries are looked for (ms) when nothing else wakes the dispatcher. */
  WEBHOOK_POLL_INTERVAL_MS: z.coerce.number().int().min(10).default(1000),
};

bootService({ name: 'webhooks', metricsPort: 9466, grpcPort: 50056, env: webhooksEnv }, async ({ runtime, logger, config }) => {
  const db = await runtime.database(openWebhooksDatabase(config.DATABASE_URL));
  // Checked after the migrations: `webhooks --migrate-only` (the chart's migration Job) needs only DATABASE_URL.
  if (!config.WEBHOOK_SECRET_KEY) {
    throw new Error(
      'Invalid configuration:\n  WEBHOOK_SECRET_KEY: required, at least 32 characters (e.g. `openssl rand -hex 32`); it encrypts webhook secrets at rest',
    );
  }
  const nc = await runtime.nats(config.NATS_URL, [[WEBHOOKS_STREAM, WEBHOOKS_STREAM_SUBJECTS]]);
  const repository = new WebhooksRepository(db);
  const secrets = new SecretBox(config.WEBHOOK_SECRET_KEY);
  const dispatcher = new Dispatcher(
    repository,
    secrets,
    {
      timeoutMs: config.WEBHOOK_TIMEOUT_MS,
      retryBaseMs: config.WEBHOOK_RETRY_BASE_MS,
      retryMaxDelayMs: config.WEBHOOK_RETRY_MAX_DELAY_MS,
      concurrency: config.WEBHOOK_CONCURRENCY,
      pollIntervalMs: config.WEBHOOK_POLL_INTERVAL_MS,
      allowPrivate: config.WEBHOOK_ALLOW_PRIVATE,
    },
    logger,
    // [telemetry] attempts by outcome; delay from the state change to a successful delivery
    (d, _result, outcome) => {
      metrics.webhookAttempts.inc({ outcome });
      const createdAt = Date.parse(String((d.payload as { created_at?: string }).created_at));
      if (outcome === 'succeeded' && Number.isFinite(createdAt)) metrics.webhookDeliveryDelay.observe(Math.max(0, (Date.now() - createdAt) / 1000));
    },
  );
  const webhooks = new WebhooksService({
    repository,
    secrets,
    policy: { allowPrivate: config.WEBHOOK_ALLOW_PRIVATE, allowHttp: config.WEBHOOK_ALLOW_HTTP },
    retryWindowMs: config.WEBHOOK_RETRY_WINDOW_MS,
    onRetry: () => dispatcher.wake(),
  });

  // Fan-out: every event published by the outbox relays becomes one pending delivery per
  // subscribed endpoint. Events are partitioned by resource; each partition's consumer has one
  // message in flight across all replicas (max_ack_pending 1), which keeps a resource's deliveries
  // in the order its events were committed while partitions run in parallel. The inserts are
  // cheap; the sending is the dispatcher's.
  const fanouts = await Promise.all(
    Array.from({ length: WEBHOOK_FANOUT_PARTITIONS }, (_, partition) =>
      runConsumer<WebhookEventMessage>(nc, {
        stream: WEBHOOKS_STREAM,
        durable: `webhooks-fanout-${partition}`,
        filterSubject: `${WebhookSubjects.eventPrefix}.${partition}.>`,
        maxDeliver: 1000,
        concurrency: 1,
        maxAckPending: 1,
        retryDelayMs: 500,
        logger,
        handler: async (message) => {
          const e = message.event;
          const created = await repository.fanOut(
            { id: e.id, type: e.type, orgId: e.org_id, resourceKey: message.resourceKey, payload: e },
            config.WEBHOOK_RETRY_WINDOW_MS,
          );
          if (created > 0) dispatcher.wake();
        },
      }),
    ),
  );
  dispatcher.start();

  const grpc = await runtime.serveGrpc({
    services: [{ name: 'kb.webhooks.v1.WebhooksService', definition: webhooksV1.WebhooksServiceService, handlers: webhooksGrpcHandlers(webhooks) }],
  });
  logger.info({ port: grpc.port, allow_private: config.WEBHOOK_ALLOW_PRIVATE, concurrency: config.WEBHOOK_CONCURRENCY }, 'webhooks gRPC listening; delivering');
  return async () => {
    await Promise.all(fanouts.map((f) => f.stop()));
    await dispatcher.stop();
  };
});

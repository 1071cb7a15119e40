import { z } from 'zod';
import { env } from './config';

const DATABASE_URL_REQUIRED = 'DATABASE_URL is required (postgres://user:pass@host:port/db)';

/**
 * Environment variables shared by several services, declared once (documented in the README's
 * configuration table). Each service spreads the pieces it needs into its own schema.
 */
export const sharedEnv = {
  /**
   * The logger's level (pino's names; `silent` logs nothing). Read by createLogger (logger.ts)
   * through loadConfig when a logger is created, which is before a service loads its own config.
   */
  logging: { LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info') },
  // The message also when the variable is unset (zod's own would be "expected string, received undefined").
  database: { DATABASE_URL: z.string(DATABASE_URL_REQUIRED).min(1, DATABASE_URL_REQUIRED) },
  nats: { NATS_URL: env.string('nats://127.0.0.1:4222') },
  /** The gRPC bind address; bootService adds it to the schema of a service booted with a `grpcPort`. */
  grpcHost: { GRPC_HOST: env.string('0.0.0.0') },
  /**
   * Observability (@kb/telemetry): the Prometheus /metrics listener of each service (its port is
   * <SERVICE>_METRICS_PORT) and OpenTelemetry trace export; bootService adds both to each
   * service's schema. Tracing itself starts before config is loaded (it must precede grpc-js);
   * these entries validate what it reads.
   */
  telemetry: {
    METRICS_ENABLED: env.bool(true),
    METRICS_HOST: env.string('0.0.0.0'),
    OTEL_EXPORTER_OTLP_ENDPOINT: z.union([z.literal(''), z.url('OTEL_EXPORTER_OTLP_ENDPOINT must be a URL such as http://otel-collector:4318')]).optional(),
    OTEL_SDK_DISABLED: env.bool(false),
  },
  /** The webhook outbox relay of documents, check and agent (docs/webhooks.md). */
  webhookOutbox: {
    /** How often the relay looks for committed webhook events to publish (ms). */
    WEBHOOK_OUTBOX_INTERVAL_MS: env.int(250),
  },
  clients: {
    DOCUMENTS_GRPC_URL: env.string('127.0.0.1:50051'),
    RETRIEVAL_GRPC_URL: env.string('127.0.0.1:50053'),
    CHECK_GRPC_URL: env.string('127.0.0.1:50054'),
    AGENT_GRPC_URL: env.string('127.0.0.1:50055'),
    WEBHOOKS_GRPC_URL: env.string('127.0.0.1:50056'),
  },
  /**
   * Chat model (used by check and agent through `@kb/models`). Unset `LLM_BASE_URL` = the embedded
   * defaults (extractive answers, heuristic verdicts); no model needed.
   */
  chatModel: {
    LLM_BASE_URL: z.url('LLM_BASE_URL must be a URL such as http://localhost:11434/v1').optional(),
    LLM_API_KEY: z.string().optional(),
    LLM_MODEL: z.string().min(1).optional(),
    LLM_TIMEOUT_MS: z.coerce.number().int().min(1000).default(120_000),
    LLM_MAX_RETRIES: z.coerce.number().int().min(0).max(10).default(3),
    LLM_MAX_TOKENS: z.coerce.number().int().min(16).default(1024),
    LLM_API_VERSION: z.string().optional(),
    LLM_RESPONSE_FORMAT: z.enum(['json_schema', 'json_object', 'none']).default('json_schema'),
  },
  storage: {
    STORAGE_DRIVER: z.enum(['local', 's3']).default('local'),
    STORAGE_LOCAL_DIR: env.string('.data/objects'),
    PUBLIC_BASE_URL: env.string('http://localhost:8080'),
    STORAGE_SIGNING_SECRET: z.string().min(16, 'STORAGE_SIGNING_SECRET must be at least 16 characters').optional(),
    S3_ENDPOINT: env.string('127.0.0.1'),
    S3_PORT: z.coerce.number().int().optional(),
    S3_USE_SSL: env.bool(false),
    S3_ACCESS_KEY: z.string().optional(),
    S3_SECRET_KEY: z.string().optional(),
    S3_BUCKET: env.string('kb-documents'),
    S3_REGION: env.string('us-east-1'),
    S3_PUBLIC_ENDPOINT: z.string().optional(),
  },
};

type StorageEnv = z.infer<z.ZodObject<typeof sharedEnv.storage>>;

/**
 * Builds the object-storage configuration (for `createObjectStorage` of `@kb/storage`) from the
 * shared storage variables.
 * @throws Error naming the missing variable (signing secret for local, keys for s3).
 */
export function storageConfigFromEnv(e: StorageEnv) {
  if (e.STORAGE_DRIVER === 'local') {
    if (!e.STORAGE_SIGNING_SECRET) throw new Error('Invalid configuration:\n  STORAGE_SIGNING_SECRET: required with STORAGE_DRIVER=local');
    return {
      driver: 'local' as const,
      local: {
        rootDir: e.STORAGE_LOCAL_DIR,
        publicBaseUrl: e.PUBLIC_BASE_URL.replace(/\/$/, ''),
        signingSecret: e.STORAGE_SIGNING_SECRET,
        maxUploadBytes: 500 * 1024 * 1024,
      },
    };
  }
  if (!e.S3_ACCESS_KEY || !e.S3_SECRET_KEY) throw new Error('Invalid configuration:\n  S3_ACCESS_KEY, S3_SECRET_KEY: required with STORAGE_DRIVER=s3');
  return {
    driver: 's3' as const,
    s3: {
      endPoint: e.S3_ENDPOINT,
      port: e.S3_PORT,
      useSSL: e.S3_USE_SSL,
      accessKey: e.S3_ACCESS_KEY,
      secretKey: e.S3_SECRET_KEY,
      bucket: e.S3_BUCKET,
      region: e.S3_REGION,
      publicEndpoint: e.S3_PUBLIC_ENDPOINT,
    },
  };
}

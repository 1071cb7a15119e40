import { env, loadConfig } from '@kb/common';
import { z } from 'zod';
import { OpenAiEmbeddingModel } from './openai-embedding-model';
import type { EmbeddingModel } from './types';

/**
 * The `EMBEDDINGS_*` variables (documented in the README's configuration table). The retrieval
 * service declares the same keys in its `main.ts` config; this schema is for `embeddingModelFromEnv`.
 */
/** Treats an empty variable as unset (compose and Helm pass `""` for unset optional values). */
const unsetIfEmpty = <T extends z.ZodTypeAny>(schema: T) => z.preprocess((v) => (v === '' ? undefined : v), schema);

export const embeddingsEnv = {
  /** OpenAI-compatible base URL (…/v1); unset = no embedding model (lexical search only). */
  EMBEDDINGS_BASE_URL: unsetIfEmpty(z.string().url('EMBEDDINGS_BASE_URL must be a URL such as http://localhost:8081/v1').optional()),
  EMBEDDINGS_API_KEY: unsetIfEmpty(z.string().optional()),
  EMBEDDINGS_MODEL: unsetIfEmpty(z.string().min(1).optional()),
  /** Vector length of the model (checked at start-up). */
  EMBEDDINGS_DIMENSIONS: unsetIfEmpty(z.coerce.number().int().min(1).max(8192).optional()),
  /** Send `dimensions` with each request (OpenAI text-embedding-3 shortening). */
  EMBEDDINGS_SEND_DIMENSIONS: env.bool(false),
  EMBEDDINGS_BATCH_SIZE: env.int(32),
  EMBEDDINGS_TIMEOUT_MS: env.int(30_000),
  EMBEDDINGS_MAX_RETRIES: env.int(3),
  /** Azure OpenAI api-version; selects the Azure client. */
  EMBEDDINGS_API_VERSION: unsetIfEmpty(z.string().min(1).optional()),
};

/**
 * Builds the configured embedding model, or `null` when `EMBEDDINGS_BASE_URL` is unset (the
 * default: lexical search only).
 * @throws Error naming the variable when `EMBEDDINGS_MODEL` or `EMBEDDINGS_DIMENSIONS` is missing
 *   while `EMBEDDINGS_BASE_URL` is set, so the service fails fast at boot.
 */
export function embeddingModelFromEnv(source: NodeJS.ProcessEnv | Record<string, unknown> = process.env): EmbeddingModel | null {
  const config = loadConfig(embeddingsEnv, source as NodeJS.ProcessEnv);
  if (!config.EMBEDDINGS_BASE_URL) return null;
  const missing = [
    !config.EMBEDDINGS_MODEL && 'EMBEDDINGS_MODEL: required when EMBEDDINGS_BASE_URL is set',
    !config.EMBEDDINGS_DIMENSIONS && 'EMBEDDINGS_DIMENSIONS: required when EMBEDDINGS_BASE_URL is set (the vector length of the model)',
  ].filter(Boolean);
  if (missing.length > 0) throw new Error(`Invalid configuration:\n  ${missing.join('\n  ')}`);
  return new OpenAiEmbeddingModel({
    baseUrl: config.EMBEDDINGS_BASE_URL,
    apiKey: config.EMBEDDINGS_API_KEY,
    model: config.EMBEDDINGS_MODEL!,
    dimensions: config.EMBEDDINGS_DIMENSIONS!,
    sendDimensions: config.EMBEDDINGS_SEND_DIMENSIONS,
    batchSize: config.EMBEDDINGS_BATCH_SIZE,
    timeoutMs: config.EMBEDDINGS_TIMEOUT_MS,
    maxRetries: config.EMBEDDINGS_MAX_RETRIES,
    apiVersion: config.EMBEDDINGS_API_VERSION,
  });
}

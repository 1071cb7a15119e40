import path from 'node:path';
import { env, loadConfig } from '@kb/common';
import { z } from 'zod';
import { DEFAULT_LOCAL_EMBEDDINGS_BATCH_SIZE, LocalEmbeddingModel, LocalEmbeddingModelOptions } from './local-embedding-model';
import { OpenAiEmbeddingModel, verifyEmbeddingModel } from './openai-embedding-model';
import type { EmbeddingModel } from './types';

/** Treats an empty variable as unset (compose and Helm pass `""` for unset optional values). */
const unsetIfEmpty = <T extends z.ZodTypeAny>(schema: T) => z.preprocess((v) => (v === '' ? undefined : v), schema);

/** Embedding providers selectable with `EMBEDDINGS_PROVIDER`. */
export const EMBEDDING_PROVIDERS = ['local', 'openai', 'none'] as const;
export type EmbeddingProvider = (typeof EMBEDDING_PROVIDERS)[number];

/** The default in-process model (transformers.js export of sentence-transformers/all-MiniLM-L6-v2: 384 dimensions, mean pooling). */
export const DEFAULT_LOCAL_EMBEDDING_MODEL = 'Xenova/all-MiniLM-L6-v2';

/** Texts per request to an OpenAI-compatible endpoint by default (fewer round trips). */
export const DEFAULT_REMOTE_EMBEDDINGS_BATCH_SIZE = 32;

/**
 * The `EMBEDDINGS_*` variables and `KB_MODELS_DIR` (documented in the README's configuration table).
 * Services spread this object into their own config schema and hand the parsed values to
 * {@link openEmbeddingModel}.
 */
export const embeddingsEnv = {
  /**
   * `local` (in-process ONNX model from `KB_MODELS_DIR`), `openai` (an OpenAI-compatible endpoint)
   * or `none` (lexical only). Unset: `openai` when `EMBEDDINGS_BASE_URL` is set, else `local`.
   */
  EMBEDDINGS_PROVIDER: unsetIfEmpty(z.enum(EMBEDDING_PROVIDERS).optional()),
  /** Models directory of the `local` provider (`<dir>/<org>/<model>/…`, the transformers.js layout). */
  KB_MODELS_DIR: env.string('.data/models'),
  /** OpenAI-compatible base URL (…/v1) of the `openai` provider. */
  EMBEDDINGS_BASE_URL: unsetIfEmpty(z.url('EMBEDDINGS_BASE_URL must be a URL such as http://localhost:8081/v1').optional()),
  EMBEDDINGS_API_KEY: unsetIfEmpty(z.string().optional()),
  /** Model id; `local` default {@link DEFAULT_LOCAL_EMBEDDING_MODEL}, required for `openai`. */
  EMBEDDINGS_MODEL: unsetIfEmpty(z.string().min(1).optional()),
  /** Vector length of the model (required for `openai`; `local` reads it from the model). */
  EMBEDDINGS_DIMENSIONS: unsetIfEmpty(z.coerce.number().int().min(1).max(8192).optional()),
  /** Send `dimensions` with each request (OpenAI text-embedding-3 shortening). */
  EMBEDDINGS_SEND_DIMENSIONS: env.bool(false),
  /**
   * Texts per forward pass of the `local` model (unset: {@link DEFAULT_LOCAL_EMBEDDINGS_BATCH_SIZE}) or per
   * request to the `openai` endpoint (unset: {@link DEFAULT_REMOTE_EMBEDDINGS_BATCH_SIZE}).
   */
  EMBEDDINGS_BATCH_SIZE: unsetIfEmpty(z.coerce.number().int().min(1).optional()),
  EMBEDDINGS_TIMEOUT_MS: env.int(30_000),
  EMBEDDINGS_MAX_RETRIES: env.int(3),
  /** Azure OpenAI api-version; selects the Azure client. */
  EMBEDDINGS_API_VERSION: unsetIfEmpty(z.string().min(1).optional()),
  /** `local`: ONNX weights, `q8` (int8, `onnx/model_quantized.onnx`) or `fp32` (`onnx/model.onnx`). */
  EMBEDDINGS_DTYPE: z.enum(['q8', 'fp32']).default('q8'),
  /**
   * `local`: onnxruntime threads per forward pass. Default 2: twice the bulk throughput of one thread on
   * two cores, and a query's wait for the pass in flight no longer (docs/retrieval.md "The local model's
   * passes"); 1 keeps a core free of bulk embedding.
   */
  EMBEDDINGS_THREADS: env.int(2),
  /** `local`: pooling, `mean` (MiniLM, mpnet, E5) or `cls` (BGE). */
  EMBEDDINGS_POOLING: z.enum(['mean', 'cls']).default('mean'),
  /** `local`: text put before each query, e.g. BGE's instruction. */
  EMBEDDINGS_QUERY_PREFIX: z.string().default(''),
};

/** Parsed `EMBEDDINGS_*` settings (a service's validated config, or {@link loadConfig} of {@link embeddingsEnv}). */
export type EmbeddingsConfig = z.infer<z.ZodObject<typeof embeddingsEnv>>;

/** What {@link openEmbeddingModel} found: a ready model, or none and why (for `degraded_reason` and one log line). */
export interface OpenedEmbeddingModel {
  provider: EmbeddingProvider;
  model: EmbeddingModel | null;
  /** Set when `model` is null: why searches are lexical only (configured `none`, or the local model is missing). */
  reason?: string;
}

/**
 * Opens the configured embedding model and checks it with one probe embedding, so a wrong URL,
 * key, model name or dimension stops the service at boot.
 * - `local`: loads `EMBEDDINGS_MODEL` (default {@link DEFAULT_LOCAL_EMBEDDING_MODEL}) from
 *   `KB_MODELS_DIR`. When its files are not there it returns `model: null` with a reason (the
 *   service starts lexical only), because the model is an optional download (`npm start` fetches it).
 * - `openai`: `EMBEDDINGS_BASE_URL`, `EMBEDDINGS_MODEL` and `EMBEDDINGS_DIMENSIONS` are required.
 * - `none`: no model.
 * @param config the `EMBEDDINGS_*`/`KB_MODELS_DIR` settings of a validated config (a schema that
 *   spreads {@link embeddingsEnv}); tools and tests parse a raw environment with {@link embeddingsConfigFromEnv}.
 * @param local options of the local model that no variable sets (`coalesce: false`, the
 *   same-run baseline of `npm run bench:index`).
 * @throws Error naming the variable for an invalid configuration; ModelProviderError when the
 *   endpoint fails the probe or the local model's files are present but cannot be loaded.
 */
export async function openEmbeddingModel(config: EmbeddingsConfig, local: Pick<LocalEmbeddingModelOptions, 'coalesce'> = {}): Promise<OpenedEmbeddingModel> {
  const c = config;
  const provider: EmbeddingProvider = c.EMBEDDINGS_PROVIDER ?? (c.EMBEDDINGS_BASE_URL ? 'openai' : 'local');
  if (provider === 'none') return { provider, model: null, reason: 'no embedding model is configured (EMBEDDINGS_PROVIDER=none)' };
  if (provider === 'local') {
    const model = c.EMBEDDINGS_MODEL ?? DEFAULT_LOCAL_EMBEDDING_MODEL;
    const { dir, present } = LocalEmbeddingModel.locate(c.KB_MODELS_DIR, model, c.EMBEDDINGS_DTYPE);
    if (!present) {
      return {
        provider,
        model: null,
        reason:
          `the embedding model ${model} is not in ${path.resolve(c.KB_MODELS_DIR)} (looked for ${dir}): search is lexical only. ` +
          `Fetch it with \`npm start\` on a machine with internet access, or copy it there (KB_MODELS_DIR)`,
      };
    }
    const loaded = await LocalEmbeddingModel.load({
      modelsDir: c.KB_MODELS_DIR,
      model,
      dtype: c.EMBEDDINGS_DTYPE,
      batchSize: c.EMBEDDINGS_BATCH_SIZE ?? DEFAULT_LOCAL_EMBEDDINGS_BATCH_SIZE,
      threads: c.EMBEDDINGS_THREADS,
      pooling: c.EMBEDDINGS_POOLING,
      queryPrefix: c.EMBEDDINGS_QUERY_PREFIX,
      ...local,
    });
    if (c.EMBEDDINGS_DIMENSIONS && c.EMBEDDINGS_DIMENSIONS !== loaded.dimensions) {
      throw new Error(`Invalid configuration:\n  EMBEDDINGS_DIMENSIONS: ${c.EMBEDDINGS_DIMENSIONS}, but ${model} gives vectors of ${loaded.dimensions}`);
    }
    return { provider, model: loaded };
  }
  const missing = [
    !c.EMBEDDINGS_BASE_URL && 'EMBEDDINGS_BASE_URL: required when EMBEDDINGS_PROVIDER=openai',
    !c.EMBEDDINGS_MODEL && 'EMBEDDINGS_MODEL: required when EMBEDDINGS_PROVIDER=openai',
    !c.EMBEDDINGS_DIMENSIONS && 'EMBEDDINGS_DIMENSIONS: required when EMBEDDINGS_PROVIDER=openai (the vector length of the model)',
  ].filter(Boolean);
  if (missing.length > 0) throw new Error(`Invalid configuration:\n  ${missing.join('\n  ')}`);
  const model = new OpenAiEmbeddingModel({
    baseUrl: c.EMBEDDINGS_BASE_URL!,
    apiKey: c.EMBEDDINGS_API_KEY,
    model: c.EMBEDDINGS_MODEL!,
    dimensions: c.EMBEDDINGS_DIMENSIONS!,
    sendDimensions: c.EMBEDDINGS_SEND_DIMENSIONS,
    batchSize: c.EMBEDDINGS_BATCH_SIZE ?? DEFAULT_REMOTE_EMBEDDINGS_BATCH_SIZE,
    timeoutMs: c.EMBEDDINGS_TIMEOUT_MS,
    maxRetries: c.EMBEDDINGS_MAX_RETRIES,
    apiVersion: c.EMBEDDINGS_API_VERSION,
  });
  await verifyEmbeddingModel(model);
  return { provider, model };
}

/**
 * Parses {@link embeddingsEnv} from a raw environment, for tools and tests that have no service
 * config (services validate it with the rest of their schema at boot).
 * @throws Error naming each invalid variable.
 */
export function embeddingsConfigFromEnv(raw: NodeJS.ProcessEnv | Record<string, string | undefined> = process.env): EmbeddingsConfig {
  return loadConfig(embeddingsEnv, raw);
}

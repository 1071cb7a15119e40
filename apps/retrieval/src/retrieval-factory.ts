import { env, loadConfig, RRF_K } from '@kb/common';
import { embeddingsEnv, openEmbeddingModel } from '@kb/models';
import { z } from 'zod';
import { ChunkStore } from './store/chunk-store';
import { LanceDbChunkStore, LanceDbChunkStoreOptions } from './store/lancedb-chunk-store';
import { QdrantChunkStore } from './store/qdrant-chunk-store';
import { HttpReranker } from './search/reranker';
import { DEFAULT_FUSION, FUSION_METHODS, FusionSettings, SCORE_NORMALIZATIONS } from './search/fusion';
import { RetrievalLogger, RetrievalService } from './search/retrieval.service';

/** Vector store adapters selectable with `VECTOR_STORE`. */
export const VECTOR_STORES = ['lancedb', 'qdrant'] as const;

/** Treats an empty variable as unset (compose and Helm pass `""` for unset optional values). */
const unsetIfEmpty = <T extends z.ZodTypeAny>(schema: T) => z.preprocess((v) => (v === '' ? undefined : v), schema);

/**
 * The variables read by {@link openRetrieval} (README configuration table): the store, the
 * embedding model (`embeddingsEnv`), the reranker and the fusion. The retrieval service spreads
 * this into its config schema; tools parse it with {@link retrievalConfigFromEnv}.
 */
export const retrievalEnv = {
  /** Folder of the embedded vector store (LanceDB). */
  RETRIEVAL_DATA_DIR: env.string('.data/lancedb'),
  /** Vector store adapter: the embedded LanceDB (default) or Qdrant. */
  VECTOR_STORE: z.enum(VECTOR_STORES).default('lancedb'),
  QDRANT_URL: unsetIfEmpty(z.url('QDRANT_URL must be a URL such as http://qdrant:6333').optional()),
  QDRANT_API_KEY: unsetIfEmpty(z.string().optional()),
  QDRANT_COLLECTION: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,200}$/)
    .default('kb_chunks'),
  ...embeddingsEnv,
  /** Optional cross-encoder rerank endpoint (`…/rerank`), Cohere/Jina-style or TEI. */
  RERANK_BASE_URL: unsetIfEmpty(z.url('RERANK_BASE_URL must be a URL such as http://localhost:8082/v1').optional()),
  RERANK_API_KEY: unsetIfEmpty(z.string().optional()),
  RERANK_MODEL: unsetIfEmpty(z.string().optional()),
  RERANK_PROTOCOL: z.enum(['cohere', 'tei']).default('cohere'),
  /** Candidates per list fed to fusion and reranking. */
  RERANK_CANDIDATES: z.coerce.number().int().min(1).max(1000).default(50),
  /** Fusion of lexical and dense lists: `convex` (normalised convex combination), `rrf` or `dbsf`; unset = the measured default (fusion.ts). */
  RETRIEVAL_FUSION: unsetIfEmpty(z.enum(FUSION_METHODS).optional()),
  /** `convex`: weight of the dense list in [0, 1]. */
  RETRIEVAL_FUSION_ALPHA: unsetIfEmpty(z.coerce.number().min(0).max(1).optional()),
  /** `convex`: score normalisation, `tmm` (theoretical min-max) or `minmax`. */
  RETRIEVAL_FUSION_NORMALIZATION: unsetIfEmpty(z.enum(SCORE_NORMALIZATIONS).optional()),
  /** `rrf`: the constant k of 1/(k + rank). */
  RETRIEVAL_RRF_K: unsetIfEmpty(z.coerce.number().min(0).max(10_000).optional()),
};

/** Validated settings of {@link openRetrieval} (the fields of {@link retrievalEnv}). */
export type RetrievalConfig = z.infer<z.ZodObject<typeof retrievalEnv>>;

/**
 * Parses {@link retrievalEnv} from a raw environment, for tools and tests that have no service
 * config (the service validates it with the rest of its schema at boot).
 * @throws Error naming each invalid variable.
 */
export function retrievalConfigFromEnv(raw: NodeJS.ProcessEnv | Record<string, string | undefined> = process.env): RetrievalConfig {
  return loadConfig(retrievalEnv, raw);
}

/** What {@link openRetrieval} returns. */
export interface OpenedRetrieval {
  service: RetrievalService;
  store: ChunkStore & { optimize?: () => Promise<void> };
  /** Short description of the configuration (store, models, dense state), for logs and tool output. */
  describe(): Record<string, unknown>;
  close(): Promise<void>;
}

/**
 * Builds the retrieval service from settings: the vector store (`VECTOR_STORE`: `lancedb`, the
 * default, in `RETRIEVAL_DATA_DIR`; or `qdrant` at `QDRANT_URL`), the embedding model
 * (`EMBEDDINGS_*` and `KB_MODELS_DIR` through `openEmbeddingModel`, checked with one probe call so a
 * wrong model or dimension fails at boot; a missing local model means lexical only) and the
 * optional reranker (`RERANK_*`). Used by `main.ts`, `npm run eval:retrieval` and `npm run bench:query`.
 * @throws Error naming the variable for an invalid configuration; ModelProviderError when the
 *   embeddings endpoint fails the start-up check.
 */
export async function openRetrieval(
  settings: RetrievalConfig,
  options: { lance?: LanceDbChunkStoreOptions; logger?: RetrievalLogger; embeddings?: { coalesce?: boolean } } = {},
): Promise<OpenedRetrieval> {
  const kind = settings.VECTOR_STORE;
  const opened = await openEmbeddingModel(settings, options.embeddings);
  const embeddings = opened.model;
  const reranker = settings.RERANK_BASE_URL
    ? new HttpReranker({
        baseUrl: settings.RERANK_BASE_URL,
        apiKey: settings.RERANK_API_KEY,
        model: settings.RERANK_MODEL ?? '',
        protocol: settings.RERANK_PROTOCOL,
        timeoutMs: 10_000,
        maxRetries: 2,
      })
    : null;
  let store: ChunkStore & { optimize?: () => Promise<void> };
  if (kind === 'qdrant') {
    if (!settings.QDRANT_URL) throw new Error('Invalid configuration:\n  QDRANT_URL: required when VECTOR_STORE=qdrant');
    store = await QdrantChunkStore.open({
      url: settings.QDRANT_URL,
      apiKey: settings.QDRANT_API_KEY,
      collection: settings.QDRANT_COLLECTION,
    });
  } else {
    store = await LanceDbChunkStore.open(settings.RETRIEVAL_DATA_DIR, options.lance);
  }
  const service = new RetrievalService(store, {
    embeddings,
    embeddingsOffReason: opened.reason,
    embeddingsUnavailable: opened.provider !== 'none' && !embeddings,
    fusion: fusionSettings(settings),
    reranker,
    candidates: settings.RERANK_CANDIDATES,
    logger: options.logger,
  });
  try {
    await service.init();
  } catch (error) {
    await store.close();
    throw error;
  }
  return {
    service,
    store,
    describe: () => ({
      store: kind,
      embeddings: embeddings
        ? { provider: opened.provider, model: embeddings.model, dimensions: embeddings.dimensions }
        : { provider: opened.provider, off: opened.reason },
      dense: service.denseState(),
      fusion: service.fusion,
      reranker: reranker ? reranker.model || settings.RERANK_BASE_URL : null,
    }),
    close: () => store.close(),
  };
}

/**
 * The fusion of lexical and dense lists from `RETRIEVAL_FUSION` (`convex`, `rrf` or `dbsf`),
 * `RETRIEVAL_FUSION_ALPHA` (dense weight of `convex`, [0, 1]), `RETRIEVAL_FUSION_NORMALIZATION`
 * (`tmm` or `minmax`) and `RETRIEVAL_RRF_K` (`rrf`'s constant), validated by {@link retrievalEnv};
 * unset values take {@link DEFAULT_FUSION}'s (and k = 60 for `rrf`).
 */
export function fusionSettings(
  settings: Pick<RetrievalConfig, 'RETRIEVAL_FUSION' | 'RETRIEVAL_FUSION_ALPHA' | 'RETRIEVAL_FUSION_NORMALIZATION' | 'RETRIEVAL_RRF_K'>,
): FusionSettings {
  const method = settings.RETRIEVAL_FUSION ?? DEFAULT_FUSION.method;
  if (method === 'dbsf') return { method: 'dbsf' };
  if (method === 'rrf') return { method: 'rrf', k: settings.RETRIEVAL_RRF_K ?? (DEFAULT_FUSION.method === 'rrf' ? DEFAULT_FUSION.k : RRF_K) };
  const defaults = DEFAULT_FUSION.method === 'convex' ? DEFAULT_FUSION : { alpha: 0.5, normalization: 'tmm' as const };
  return {
    method: 'convex',
    alpha: settings.RETRIEVAL_FUSION_ALPHA ?? defaults.alpha,
    normalization: settings.RETRIEVAL_FUSION_NORMALIZATION ?? defaults.normalization,
  };
}

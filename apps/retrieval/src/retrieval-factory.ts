import { openEmbeddingModel } from '@kb/models';
import { ChunkStore } from './store/chunk-store';
import { LanceDbChunkStore, LanceDbChunkStoreOptions } from './store/lancedb-chunk-store';
import { QdrantChunkStore } from './store/qdrant-chunk-store';
import { HttpReranker } from './search/reranker';
import { DEFAULT_FUSION, FUSION_METHODS, FusionSettings, SCORE_NORMALIZATIONS, ScoreNormalization } from './search/fusion';
import { RetrievalLogger, RetrievalService } from './search/retrieval.service';

/** Vector store adapters selectable with `VECTOR_STORE`. */
export const VECTOR_STORES = ['lancedb', 'qdrant'] as const;

/** Settings read by {@link openRetrieval}: the retrieval service's env (validated config, or raw env in tools). */
export interface RetrievalSettings {
  RETRIEVAL_DATA_DIR?: string;
  VECTOR_STORE?: string;
  QDRANT_URL?: string;
  QDRANT_API_KEY?: string;
  QDRANT_COLLECTION?: string;
  RERANK_BASE_URL?: string;
  RERANK_API_KEY?: string;
  RERANK_MODEL?: string;
  RERANK_PROTOCOL?: string;
  RERANK_CANDIDATES?: number | string;
  RETRIEVAL_FUSION?: string;
  RETRIEVAL_FUSION_ALPHA?: number | string;
  RETRIEVAL_FUSION_NORMALIZATION?: string;
  RETRIEVAL_RRF_K?: number | string;
  [key: string]: unknown;
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
  settings: RetrievalSettings,
  options: { lance?: LanceDbChunkStoreOptions; logger?: RetrievalLogger; embeddings?: { coalesce?: boolean } } = {},
): Promise<OpenedRetrieval> {
  const kind = settings.VECTOR_STORE ?? 'lancedb';
  if (!(VECTOR_STORES as readonly string[]).includes(kind)) throw new Error(`VECTOR_STORE must be one of ${VECTOR_STORES.join(', ')} (got "${kind}")`);
  const opened = await openEmbeddingModel(settings, options.embeddings);
  const embeddings = opened.model;
  const reranker = settings.RERANK_BASE_URL
    ? new HttpReranker({
        baseUrl: settings.RERANK_BASE_URL,
        apiKey: settings.RERANK_API_KEY,
        model: settings.RERANK_MODEL ?? '',
        protocol: settings.RERANK_PROTOCOL === 'tei' ? 'tei' : 'cohere',
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
      collection: settings.QDRANT_COLLECTION ?? 'kb_chunks',
    });
  } else {
    store = await LanceDbChunkStore.open(settings.RETRIEVAL_DATA_DIR ?? '.data/lancedb', options.lance);
  }
  const service = new RetrievalService(store, {
    embeddings,
    embeddingsOffReason: opened.reason,
    embeddingsUnavailable: opened.provider !== 'none' && !embeddings,
    fusion: fusionSettings(settings),
    reranker,
    candidates: settings.RERANK_CANDIDATES ? Number(settings.RERANK_CANDIDATES) : undefined,
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
      embeddings: embeddings ? { provider: opened.provider, model: embeddings.model, dimensions: embeddings.dimensions } : { provider: opened.provider, off: opened.reason },
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
 * (`tmm` or `minmax`) and `RETRIEVAL_RRF_K` (`rrf`'s constant); unset values take
 * {@link DEFAULT_FUSION}'s (and k = 60 for `rrf`).
 * @throws Error naming the variable for an invalid value.
 */
export function fusionSettings(settings: RetrievalSettings): FusionSettings {
  const unset = (v: unknown) => v === undefined || v === null || v === '';
  const method = unset(settings.RETRIEVAL_FUSION) ? DEFAULT_FUSION.method : String(settings.RETRIEVAL_FUSION);
  if (!(FUSION_METHODS as readonly string[]).includes(method)) {
    throw new Error(`Invalid configuration:\n  RETRIEVAL_FUSION: must be one of ${FUSION_METHODS.join(', ')} (got "${method}")`);
  }
  if (method === 'dbsf') return { method: 'dbsf' };
  if (method === 'rrf') {
    const k = unset(settings.RETRIEVAL_RRF_K) ? (DEFAULT_FUSION.method === 'rrf' ? DEFAULT_FUSION.k : 60) : Number(settings.RETRIEVAL_RRF_K);
    if (!Number.isFinite(k) || k < 0 || k > 10_000) throw new Error(`Invalid configuration:\n  RETRIEVAL_RRF_K: must be a number in [0, 10000] (got "${settings.RETRIEVAL_RRF_K}")`);
    return { method: 'rrf', k };
  }
  const defaults = DEFAULT_FUSION.method === 'convex' ? DEFAULT_FUSION : { alpha: 0.5, normalization: 'tmm' as const };
  const alpha = unset(settings.RETRIEVAL_FUSION_ALPHA) ? defaults.alpha : Number(settings.RETRIEVAL_FUSION_ALPHA);
  if (!(alpha >= 0 && alpha <= 1)) throw new Error(`Invalid configuration:\n  RETRIEVAL_FUSION_ALPHA: must be a number in [0, 1] (got "${settings.RETRIEVAL_FUSION_ALPHA}")`);
  const normalization = unset(settings.RETRIEVAL_FUSION_NORMALIZATION) ? defaults.normalization : String(settings.RETRIEVAL_FUSION_NORMALIZATION);
  if (!(SCORE_NORMALIZATIONS as readonly string[]).includes(normalization)) {
    throw new Error(`Invalid configuration:\n  RETRIEVAL_FUSION_NORMALIZATION: must be one of ${SCORE_NORMALIZATIONS.join(', ')} (got "${normalization}")`);
  }
  return { method: 'convex', alpha, normalization: normalization as ScoreNormalization };
}

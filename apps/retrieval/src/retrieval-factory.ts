import { openEmbeddingModel } from '@kb/models';
import { ChunkStore } from './store/chunk-store';
import { LanceDbChunkStore, LanceDbChunkStoreOptions } from './store/lancedb-chunk-store';
import { QdrantChunkStore } from './store/qdrant-chunk-store';
import { HttpReranker } from './search/reranker';
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
  options: { lance?: LanceDbChunkStoreOptions; logger?: RetrievalLogger } = {},
): Promise<OpenedRetrieval> {
  const kind = settings.VECTOR_STORE ?? 'lancedb';
  if (!(VECTOR_STORES as readonly string[]).includes(kind)) throw new Error(`VECTOR_STORE must be one of ${VECTOR_STORES.join(', ')} (got "${kind}")`);
  const opened = await openEmbeddingModel(settings);
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
      reranker: reranker ? reranker.model || settings.RERANK_BASE_URL : null,
    }),
    close: () => store.close(),
  };
}

import type { EmbeddingModel } from '@kb/models';
import {
  ChunkStore,
  DenseChunkIndex,
  hasDenseIdSearch,
  hasDenseIndex,
  MAX_TOP_K,
  ScoredId,
  SearchHit,
  SearchScope,
  StoredChunk,
  VectorSpace,
} from '../store/chunk-store';
import { DEFAULT_FUSION, fuse, fuseScored, FusionSettings, scoredIds } from './fusion';
import type { Reranker } from './reranker';

/**
 * A store that fuses lexical and dense results itself (Qdrant's Query API), with the same
 * {@link FusionSettings} the service applies on other stores.
 */
interface ServerSideFusion {
  searchHybrid(query: string, vector: number[], scope: SearchScope, topK: number, candidates: number, fusion?: FusionSettings): Promise<SearchHit[]>;
}

/**
 * Chunks embedded per step of the enrichment: a document's chunks are embedded and their vectors
 * stored this many at a time, so a large document never holds all its vectors in memory at once
 * (about 256 × 384 floats per step for MiniLM) and other work interleaves between steps.
 */
export const EMBED_PAGE_CHUNKS = 256;

/** How a search was answered. */
export type SearchMode = 'lexical' | 'hybrid';

/** Result of {@link RetrievalService.search}. */
export interface RetrievalResult {
  hits: SearchHit[];
  /** `lexical` (BM25 only) or `hybrid` (BM25 + dense, fused as configured: {@link FusionSettings}). */
  mode: SearchMode;
  /** Why a configured dense path or reranker was not used for this search (logged too). */
  degradedReason?: string;
}

/** Minimal structured logger (pino-compatible). */
export interface RetrievalLogger {
  info(obj: Record<string, unknown>, msg: string): void;
  warn(obj: Record<string, unknown>, msg: string): void;
}

/** Options of {@link RetrievalService}. */
export interface RetrievalServiceOptions {
  /** Dense embeddings; `null` = lexical only. */
  embeddings?: EmbeddingModel | null;
  /** Why `embeddings` is null (reported once in the log and as the dense state's reason). */
  embeddingsOffReason?: string;
  /**
   * True when an embedding model was configured but could not be loaded (the local model's files
   * are missing): every search then reports `embeddingsOffReason` as its `degradedReason`. False
   * (default) when lexical-only search is what was configured (`EMBEDDINGS_PROVIDER=none`).
   */
  embeddingsUnavailable?: boolean;
  /** Cross-encoder reranking of the fused candidates; `null` = none. */
  reranker?: Reranker | null;
  /** Candidates taken from each list before fusion: max(topK, this). Default 50. */
  candidates?: number;
  /** How lexical and dense lists are fused. Default {@link DEFAULT_FUSION}. */
  fusion?: FusionSettings;
  logger?: RetrievalLogger;
}

/** State of the dense index relative to the configured embedding model. */
export type DenseState =
  { state: 'off'; reason: string } | { state: 'ready'; space: VectorSpace } | { state: 'stale'; configured: VectorSpace; indexed: VectorSpace };

/**
 * The use cases of the retrieval service over a {@link ChunkStore}: index, embed, delete and search
 * chunks. The gRPC controller, `npm run eval:retrieval` and `npm run bench:query` all go through
 * this class, so they measure what the service runs.
 *
 * Search: BM25 always; when an embedding model is configured AND the index holds vectors of that
 * same model (name + dimensions, see {@link DenseState}), the query is embedded, the nearest chunks
 * are fetched in the same scope and both lists are fused ({@link fuse}: a normalised convex
 * combination by default, or reciprocal rank fusion); then, when configured, the fused candidates
 * are reranked.
 * When the model changed since the vectors were written, searches stay lexical (never mixing
 * vector spaces), report `degradedReason` and log a warning until `kbctl reindex` runs.
 * A failing embeddings or rerank provider degrades the search the same way instead of failing it.
 */
export class RetrievalService {
  private readonly embeddings: EmbeddingModel | null;
  private readonly reranker: Reranker | null;
  private readonly candidates: number;
  /** The fusion of lexical and dense lists (see {@link FusionSettings}). */
  readonly fusion: FusionSettings;
  private readonly logger: RetrievalLogger | undefined;
  private dense: DenseState = { state: 'off', reason: 'no embedding model is configured' };
  private warnedStale = 0;
  /** Reported as `degradedReason` by every search (a configured embedding model that is missing). */
  private readonly unavailableReason: string | undefined;

  constructor(
    readonly store: ChunkStore,
    options: RetrievalServiceOptions = {},
  ) {
    this.embeddings = options.embeddings ?? null;
    this.reranker = options.reranker ?? null;
    this.candidates = options.candidates ?? 50;
    this.fusion = options.fusion ?? DEFAULT_FUSION;
    this.logger = options.logger;
    if (!this.embeddings && options.embeddingsOffReason) {
      this.dense = { state: 'off', reason: options.embeddingsOffReason };
      this.logger?.warn({ reason: options.embeddingsOffReason }, 'dense search is off: lexical (BM25) only');
    }
    this.unavailableReason = !this.embeddings && options.embeddingsUnavailable ? options.embeddingsOffReason : undefined;
  }

  /**
   * Compares the configured embedding model with the vector space recorded in the index. A fresh
   * index adopts the configured space. Call once at start-up (and after a re-index).
   */
  async init(): Promise<DenseState> {
    if (!this.embeddings) return this.dense;
    if (!hasDenseIndex(this.store)) {
      this.dense = { state: 'off', reason: 'the vector store has no dense index' };
      return this.dense;
    }
    const configured = { model: this.embeddings.model, dimensions: this.embeddings.dimensions };
    const indexed = await this.store.vectorSpace();
    if (!indexed) {
      await this.store.resetVectorSpace(configured);
      this.dense = { state: 'ready', space: configured };
    } else if (indexed.model === configured.model && indexed.dimensions === configured.dimensions) {
      this.dense = { state: 'ready', space: configured };
    } else {
      this.dense = { state: 'stale', configured, indexed };
      this.logger?.warn({ configured, indexed }, 'embedding model changed: searches are lexical only until `kbctl reindex` re-embeds every document');
    }
    return this.dense;
  }

  /** True when an embedding model is loaded (whatever the state of the index's vectors). */
  hasEmbeddings(): boolean {
    return this.embeddings !== null;
  }

  /** The loaded embedding model, or null (lexical only); `npm run eval:retrieval` embeds claims with it. */
  embeddingModel(): EmbeddingModel | null {
    return this.embeddings;
  }

  /** The dense index state (see {@link DenseState}). */
  denseState(): DenseState {
    return this.dense;
  }

  /** Replaces the chunks of one document (see {@link ChunkStore.replaceDocumentChunks}); its old vectors go with them. */
  indexDocument(orgId: string, documentId: string, chunks: StoredChunk[]): Promise<void> {
    return this.store.replaceDocumentChunks(orgId, documentId, chunks);
  }

  /** One page of a document's chunks in document order, with the document's chunk count (see {@link ChunkStore.listDocumentChunks}). */
  listDocumentChunks(orgId: string, documentId: string, limit: number, offset: number): Promise<{ chunks: StoredChunk[]; total: number }> {
    return this.store.listDocumentChunks(orgId, documentId, limit, offset);
  }

  /** The chunk `chunkId` of (orgId, documentId), or null when that document of that org has no such chunk. */
  async getDocumentChunk(orgId: string, documentId: string, chunkId: string): Promise<StoredChunk | null> {
    const [chunk] = await this.store.getChunks(orgId, [chunkId]);
    return chunk && chunk.documentId === documentId ? chunk : null;
  }

  /** Deletes the chunks (and vectors) of these documents of this org; returns how many chunks were deleted. */
  deleteDocuments(orgId: string, documentIds: string[]): Promise<number> {
    return this.store.deleteDocuments(orgId, documentIds);
  }

  /**
   * Embeds the already-indexed chunks of one document (the enrichment step between `ready` and
   * `completed`). No-op returning `{ embedded: 0, skipped: reason }` when no embedding model is
   * configured or the index holds another model's vectors (re-index pending).
   * @throws ModelProviderError when the provider fails (the caller retries the document).
   */
  async embedDocument(orgId: string, documentId: string, signal?: AbortSignal): Promise<{ embedded: number; skipped?: string }> {
    const dense = this.dense;
    if (dense.state !== 'ready' || !this.embeddings || !hasDenseIndex(this.store)) {
      return { embedded: 0, skipped: dense.state === 'off' ? dense.reason : 'the embedding model changed; run `kbctl reindex`' };
    }
    return { embedded: await this.embedInto(this.store, orgId, documentId, signal) };
  }

  /**
   * Re-index: drops every vector, records the configured model as the index's space and embeds
   * every document of every org. Searches are lexical while it runs and hybrid after.
   * @returns documents and chunks embedded.
   * @throws Error when no embedding model is configured or the store has no dense index.
   */
  async reindex(signal?: AbortSignal): Promise<{ documents: number; chunks: number }> {
    if (!this.embeddings) throw new Error('no embedding model is configured (EMBEDDINGS_PROVIDER, EMBEDDINGS_MODEL, KB_MODELS_DIR): nothing to re-index');
    if (!hasDenseIndex(this.store)) throw new Error('the vector store has no dense index');
    const space = { model: this.embeddings.model, dimensions: this.embeddings.dimensions };
    this.dense = { state: 'off', reason: 're-index in progress' };
    await this.store.resetVectorSpace(space);
    let documents = 0;
    let chunks = 0;
    try {
      for (const { orgId, documentId } of await this.store.listDocuments()) {
        chunks += await this.embedInto(this.store, orgId, documentId, signal);
        documents++;
      }
    } finally {
      this.dense = { state: 'ready', space };
    }
    this.logger?.info({ documents, chunks, space }, 're-index finished: hybrid search enabled');
    return { documents, chunks };
  }

  /** Search within `scope`, best first, at most `topK` hits (see the class comment). */
  async search(query: string, scope: SearchScope, topK: number, signal?: AbortSignal): Promise<RetrievalResult> {
    const dense = this.dense;
    const useDense = dense.state === 'ready' && this.embeddings !== null && hasDenseIndex(this.store);
    if (!useDense && !this.reranker) {
      const hits = await this.store.search(query, scope, topK);
      const reason = dense.state === 'stale' ? this.staleReason(dense) : this.unavailableReason;
      return reason ? { hits, mode: 'lexical', degradedReason: reason } : { hits, mode: 'lexical' };
    }
    const k = Math.min(MAX_TOP_K, Math.max(topK, this.candidates));
    let degradedReason: string | undefined = dense.state === 'stale' ? this.staleReason(dense) : this.unavailableReason;
    // The lexical search runs while the query is embedded and searched densely: LanceDB's FTS
    // and the embedding model run on different threads, so on two cores the hybrid latency is
    // about max(lexical, embedding + dense) instead of their sum (measured: docs/retrieval.md).
    const denseSearch = async (): Promise<{ fused?: SearchHit[]; dense?: SearchHit[]; denseIds?: ScoredId[] } | { error: unknown }> => {
      try {
        const [vector] = await this.embeddings!.embed([query], signal, 'query');
        const store = this.store as ChunkStore & DenseChunkIndex & Partial<ServerSideFusion>;
        if (store.searchHybrid) return { fused: await store.searchHybrid(query, vector, scope, k, k, this.fusion) };
        // Without a reranker only the `topK` hits returned need their chunks (fuseReadingKept).
        if (!this.reranker && hasDenseIdSearch(store)) return { denseIds: await store.searchDenseIds(vector, scope, k) };
        return { dense: await store.searchDense(vector, scope, k) };
      } catch (error) {
        return { error };
      }
    };
    const [lexical, denseOutcome] = await Promise.all([
      this.store.search(query, scope, k),
      useDense && query.trim() !== '' ? denseSearch() : Promise.resolve(null),
    ]);
    let fused = lexical;
    let mode: SearchMode = 'lexical';
    const denseFailed = (error: unknown) => {
      if (signal?.aborted) throw error;
      degradedReason = `dense search failed, lexical results only: ${error instanceof Error ? error.message : String(error)}`;
      this.logger?.warn({ err: degradedReason }, 'dense search failed; answering with lexical results');
    };
    if (denseOutcome && 'error' in denseOutcome) {
      denseFailed(denseOutcome.error);
    } else if (denseOutcome?.denseIds) {
      try {
        fused = await this.fuseReadingKept(lexical, denseOutcome.denseIds, scope, topK, k);
        mode = 'hybrid';
      } catch (error) {
        denseFailed(error);
      }
    } else if (denseOutcome) {
      fused = denseOutcome.fused ?? fuse(lexical, denseOutcome.dense!, k, this.fusion);
      mode = 'hybrid';
    }
    if (this.reranker && fused.length > 1) {
      try {
        const scores = await this.reranker.rerank(
          query,
          fused.map((h) => h.chunk.text),
          signal,
        );
        fused = fused
          .map((h, i) => ({ h, s: scores[i], i }))
          .sort((a, b) => b.s - a.s || a.i - b.i)
          .map(({ h, s }) => ({ ...h, score: s }));
      } catch (error) {
        if (signal?.aborted) throw error;
        degradedReason = `rerank failed, fused order kept: ${error instanceof Error ? error.message : String(error)}`;
        this.logger?.warn({ err: degradedReason }, 'rerank failed; keeping the fused order');
      }
    }
    const hits = fused.slice(0, topK).map((h, i) => ({ ...h, rank: i + 1 }));
    return degradedReason ? { hits, mode, degradedReason } : { hits, mode };
  }

  /**
   * Fuses the BM25 hits (which carry their chunks) with dense hits known by id
   * ({@link fuseScored}, the same order and scores as {@link fuse}), then reads only the chunks of
   * the first `topK` fused hits that BM25 did not bring, instead of all `candidates` dense hits'
   * (measured at 1M chunks: docs/retrieval.md). A dense id whose chunk is gone (deleted after
   * its vector was found) is skipped and the next fused hit takes its place, as `searchDense`
   * skips it. Returns at most `topK` hits, best first.
   */
  private async fuseReadingKept(lexical: SearchHit[], dense: ScoredId[], scope: SearchScope, topK: number, candidates: number): Promise<SearchHit[]> {
    const order = fuseScored(scoredIds(lexical), dense, candidates, this.fusion);
    const chunks = new Map(lexical.map((h) => [h.chunk.id, h.chunk]));
    const hits: SearchHit[] = [];
    let next = 0;
    while (hits.length < topK && next < order.length) {
      const batch = order.slice(next, next + topK - hits.length);
      next += batch.length;
      const unread = batch.filter((e) => !chunks.has(e.id)).map((e) => e.id);
      if (unread.length > 0) for (const chunk of await this.store.getChunks(scope.orgId, unread)) chunks.set(chunk.id, chunk);
      for (const e of batch) {
        const chunk = chunks.get(e.id);
        if (chunk) hits.push({ chunk, score: e.score, rank: hits.length + 1 });
      }
    }
    return hits;
  }

  private staleReason(dense: Extract<DenseState, { state: 'stale' }>): string {
    if (Date.now() - this.warnedStale > 60_000) {
      this.warnedStale = Date.now();
      this.logger?.warn({ configured: dense.configured, indexed: dense.indexed }, 'lexical-only search: run `kbctl reindex`');
    }
    return (
      `the index holds vectors of ${dense.indexed.model} (${dense.indexed.dimensions} dimensions) but ${dense.configured.model} ` +
      `(${dense.configured.dimensions}) is configured: lexical search only until \`kbctl reindex\``
    );
  }

  /**
   * Embeds a document's chunks {@link EMBED_PAGE_CHUNKS} at a time, storing each page's vectors
   * before embedding the next (bounded memory; `bulk` priority, so searches go first).
   */
  private async embedInto(store: ChunkStore & DenseChunkIndex, orgId: string, documentId: string, signal?: AbortSignal): Promise<number> {
    const chunks = await store.documentChunks(orgId, documentId);
    let stored = 0;
    for (let i = 0; i < chunks.length; i += EMBED_PAGE_CHUNKS) {
      signal?.throwIfAborted();
      const page = chunks.slice(i, i + EMBED_PAGE_CHUNKS);
      const vectors = await this.embeddings!.embed(page.map(embeddingText), signal, 'bulk');
      stored += await store.upsertVectors(
        orgId,
        documentId,
        page.map((c, j) => ({ chunkId: c.id, vector: vectors[j] })),
      );
    }
    return stored;
  }
}

/** Text embedded for a chunk: its heading path (context the chunk text lacks), then the text. */
export function embeddingText(chunk: StoredChunk): string {
  const headings = chunk.headingPath.filter((h) => h.trim() !== '').join(' > ');
  return headings ? `${headings}\n\n${chunk.text}` : chunk.text;
}

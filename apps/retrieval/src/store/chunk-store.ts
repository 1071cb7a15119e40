/**
 * The chunk store port of the retrieval service: where indexed chunks live and how they are found
 * by lexical (BM25) search. Two adapters implement it: the embedded LanceDB store
 * (`lancedb-chunk-store.ts`) and, later, Qdrant. Both run the same contract suite
 * (`chunk-store.contract.ts`), so everything promised here is tested against every adapter.
 *
 * Isolation rule (engineering guide §5): every operation takes the org id and never returns,
 * counts or deletes a chunk of another org, whatever the other arguments say.
 */

import { CodedError } from '@kb/common';
import type { IndexedChunk } from '@kb/knowledge';

/** Org id of the shared safety corpus (proto `CORPUS_SAFETY`); an ordinary org id to the store. */
export const SAFETY_CORPUS_ORG = '__safety__';

/** Largest `topK` a search accepts. Larger values are a caller bug (the gateway caps far lower). */
export const MAX_TOP_K = 1000;

/** Largest page of {@link ChunkStore.listDocumentChunks}. */
export const MAX_PAGE_CHUNKS = 1000;

/**
 * Longest query (in UTF-16 code units) that is searched; the rest is ignored. Bounds the work of
 * one search: a requirement text used as a query is far shorter.
 */
export const MAX_QUERY_LENGTH = 4096;

/** One chunk of one document, as indexed. Mirrors `kb.retrieval.v1.Chunk` plus the owning org. */
export interface StoredChunk extends IndexedChunk {
  /** Owning org; the shared safety corpus uses {@link SAFETY_CORPUS_ORG}. Any non-empty string. */
  orgId: string;
}

/** Which chunks a search may return. Always within one org. */
export interface SearchScope {
  orgId: string;
  /**
   * When a string: the chunks of that project PLUS the org-level chunks (`projectId === null`) of
   * the same org, never another project's. When `undefined` or `null`: every chunk of the org.
   */
  projectId?: string | null;
  /** When non-empty: only chunks of these documents (intersected with the scope above). */
  documentIds?: string[];
  /**
   * Never these documents' chunks (superseded or not yet ready versions, decisions.md "Document
   * versions"). Applied in the store's filter, before ranking, so `topK` counts only the rest.
   */
  excludeDocumentIds?: string[];
}

/** One search result. */
export interface SearchHit {
  chunk: StoredChunk;
  /** Relevance score (BM25 for lexical search); higher is better. Comparable within one search only. */
  score: number;
  /** 1-based position in the result list. */
  rank: number;
}

/** Machine-readable reason of a {@link ChunkStoreError}; the service maps it to its domain error. */
export enum ChunkStoreErrorCode {
  /** The arguments are invalid (empty org id, a chunk of another document, bad topK...). */
  Validation = 'Validation',
  /** The store is closed or not usable (a call after `close()`). */
  Unavailable = 'Unavailable',
  /** The storage engine failed (I/O error, corrupt table...). The cause is attached. */
  Internal = 'Internal',
}

/**
 * The only error a {@link ChunkStore} throws. `message` is safe to log; it never contains chunk
 * text. The retrieval service maps `code` to its own domain error (and from there to gRPC status).
 */
export class ChunkStoreError extends CodedError<ChunkStoreErrorCode> {
  override readonly name = 'ChunkStoreError';
}

/**
 * Storage port for indexed chunks. Implementations are safe to call concurrently: writes are
 * serialized inside the adapter and applied in call order. They throw only {@link ChunkStoreError}.
 */
export interface ChunkStore {
  /**
   * Replaces every chunk of (orgId, documentId) with `chunks` atomically enough that a search
   * never sees duplicates after it returns; idempotent (same call twice = same state). `chunks`
   * may be empty (the document then has no chunks). Every chunk must carry this `orgId` and
   * `documentId` and ids must be unique within the call, else `Validation`. The new chunks are
   * searchable as soon as the returned promise resolves.
   */
  replaceDocumentChunks(orgId: string, documentId: string, chunks: StoredChunk[]): Promise<void>;
  /** Deletes every chunk of these documents of this org; returns the number of chunks deleted. */
  deleteDocuments(orgId: string, documentIds: string[]): Promise<number>;
  /** Number of chunks of (orgId, documentId); 0 for an unknown document. */
  countChunks(orgId: string, documentId: string): Promise<number>;
  /**
   * BM25 lexical search within `scope`, best first, at most `topK` hits (integer in
   * [1, {@link MAX_TOP_K}], else `Validation`). The scope filters before ranking, so `topK` is
   * filled from in-scope chunks. A query with no searchable term (empty, only stop words or
   * punctuation) returns `[]`; query syntax characters have no special meaning.
   */
  search(query: string, scope: SearchScope, topK: number): Promise<SearchHit[]>;
  /**
   * The chunks of this org with these ids, in the order of `chunkIds`; unknown ids (and ids of
   * other orgs) are skipped, duplicates returned once.
   */
  getChunks(orgId: string, chunkIds: string[]): Promise<StoredChunk[]>;
  /**
   * One page of the chunks of (orgId, documentId) in document order (`chunkIndex` ascending):
   * `limit` chunks (integer in [1, {@link MAX_PAGE_CHUNKS}], else `Validation`) after skipping
   * `offset` (integer >= 0), plus `total`, the document's chunk count. An unknown document, or one
   * of another org, gives `{ chunks: [], total: 0 }`.
   */
  listDocumentChunks(orgId: string, documentId: string, limit: number, offset: number): Promise<{ chunks: StoredChunk[]; total: number }>;
  /** Waits for pending writes, releases resources. Idempotent; later calls throw `Unavailable`. */
  close(): Promise<void>;
}

/** The embedding model whose vectors an index holds: vectors of different spaces are never mixed. */
export interface VectorSpace {
  /** Model name as configured (`EMBEDDINGS_MODEL`). */
  model: string;
  /** Vector length. */
  dimensions: number;
}

/** One chunk's dense vector. */
export interface ChunkVector {
  chunkId: string;
  vector: number[];
}

/**
 * Optional capability of a {@link ChunkStore}: dense vectors of chunks, in exactly one
 * {@link VectorSpace} at a time. Vectors follow their chunks: replacing or deleting a document's
 * chunks removes its vectors. Errors: only {@link ChunkStoreError}.
 */
export interface DenseChunkIndex {
  /** The space of the stored vectors, or `null` when none was set. */
  vectorSpace(): Promise<VectorSpace | null>;
  /** Drops every stored vector (every org) and records `space` as the index's space (re-index). */
  resetVectorSpace(space: VectorSpace): Promise<void>;
  /**
   * Stores vectors for chunks of (orgId, documentId) that exist; returns how many were stored.
   * Vectors must have the space's length, else `Validation`.
   */
  upsertVectors(orgId: string, documentId: string, vectors: ChunkVector[]): Promise<number>;
  /** Nearest chunks by cosine similarity within `scope` (same scope rules as `search`), best first. */
  searchDense(vector: number[], scope: SearchScope, topK: number): Promise<SearchHit[]>;
  /** Every chunk of (orgId, documentId), in chunk order. */
  documentChunks(orgId: string, documentId: string): Promise<StoredChunk[]>;
  /** Every (orgId, documentId) pair in the store (for re-indexing). */
  listDocuments(): Promise<{ orgId: string; documentId: string }[]>;
}

/**
 * Checks the page arguments of {@link ChunkStore.listDocumentChunks}.
 * @throws ChunkStoreError `Validation` when `limit` is not an integer in [1, MAX_PAGE_CHUNKS] or
 *   `offset` is not an integer >= 0.
 */
export function requirePage(limit: number, offset: number): void {
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_CHUNKS) {
    throw new ChunkStoreError(ChunkStoreErrorCode.Validation, `limit must be an integer from 1 to ${MAX_PAGE_CHUNKS}`);
  }
  if (!Number.isInteger(offset) || offset < 0) throw new ChunkStoreError(ChunkStoreErrorCode.Validation, 'offset must be an integer >= 0');
}

/**
 * A chunk id with a score: what fusion reads of a hit (`search/fusion.ts` `fuseScored`), so dense
 * hits can be fused before their chunks are read.
 */
export interface ScoredId {
  id: string;
  score: number;
}

/**
 * Optional capability of a {@link DenseChunkIndex}: the dense search without reading the chunks.
 * `RetrievalService.search` fuses these with the BM25 hits (which carry their chunks) and reads
 * only the chunks of the fused hits it returns that BM25 did not bring: at 1M chunks, reading the
 * 50 dense candidates' chunks by id was a third of the dense stage (docs/retrieval.md).
 */
export interface DenseIdSearch {
  /**
   * The same hits as `searchDense`, as chunk ids with their cosine similarity, best first. An id
   * can name a chunk deleted meanwhile (its vector not yet removed): `getChunks` skips it.
   */
  searchDenseIds(vector: number[], scope: SearchScope, topK: number): Promise<ScoredId[]>;
}

/** True when `store` implements {@link DenseIdSearch}. */
export function hasDenseIdSearch(store: object): store is DenseIdSearch {
  return typeof (store as Partial<DenseIdSearch>).searchDenseIds === 'function';
}

/** True when `store` implements {@link DenseChunkIndex}. */
export function hasDenseIndex(store: ChunkStore): store is ChunkStore & DenseChunkIndex {
  return typeof (store as Partial<DenseChunkIndex>).searchDense === 'function';
}

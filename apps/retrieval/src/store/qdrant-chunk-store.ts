import { pickCamelFields } from '@kb/common';
import { createHash } from 'node:crypto';
import { QdrantClient } from '@qdrant/js-client-rest';
import {
  ChunkStore,
  requirePage,
  ChunkStoreError,
  ChunkStoreErrorCode,
  ChunkVector,
  DenseChunkIndex,
  SearchHit,
  SearchScope,
  StoredChunk,
  VectorSpace,
} from './chunk-store';
import { chunkSparseVector, querySparseVector } from './lexical-terms';
import { DEFAULT_FUSION, fuse, FusionSettings } from '../search/fusion';
import {
  packWordBoxes,
  type PackedWordBoxes,
  requireString,
  requireStringArray,
  requireTopK,
  unpackWordBoxes,
  validateDocumentChunks,
  validateStoredChunk,
  validation,
  wrapEngineCall,
} from './store-input';

/** Name of the sparse (BM25) vector in the collection. */
export const SPARSE_VECTOR = 'bm25';

/** Org id of the collection's one metadata point (never a real org: orgs are UUIDs or `__safety__`). */
const META_ORG = '__kb_meta__';
const META_POINT_ID = '00000000-0000-5000-8000-000000000000';
/** Points per upsert request. */
const UPSERT_BATCH = 256;

/** Options of {@link QdrantChunkStore.open}. */
export interface QdrantChunkStoreOptions {
  /** Qdrant REST URL, e.g. `http://qdrant:6333`. */
  url: string;
  apiKey?: string;
  /** Collection of this deployment (every org shares it, isolated by the `org_id` payload filter). */
  collection: string;
  /** Request timeout (ms). Default 30 000. */
  timeoutMs?: number;
}

interface ChunkPayload {
  org_id: string;
  project_id: string | null;
  document_id: string;
  chunk_id: string;
  file_name: string;
  chunk_index: number;
  text: string;
  heading_path: string[];
  start_page: number | null;
  end_page: number | null;
  page_spans: { page: number; offset: number }[];
  /** Packed word boxes (see `packWordBoxes`); absent on points stored before boxes existed. */
  word_boxes?: PackedWordBoxes;
}

/**
 * The Qdrant {@link ChunkStore} (production, scales past one machine), on `@qdrant/js-client-rest`.
 *
 * - One collection per deployment; every point is one chunk, its payload the chunk, with keyword
 *   payload indexes on `org_id` (tenant index), `project_id` and `document_id`. Point ids are
 *   UUID-shaped SHA-1 of (org, chunk id), so equal chunk ids of two orgs never collide.
 * - Lexical search: the sparse vector {@link SPARSE_VECTOR} with Qdrant's `idf` modifier holds
 *   BM25 term weights ({@link chunkSparseVector}); the IDF is computed by Qdrant over the collection.
 * - Dense search: a named dense vector per {@link VectorSpace} (`dense_<dims>_<model hash>`, cosine),
 *   added with `createVectorName` when a space is set; a new space deletes the old vector name, so
 *   two models' vectors can never be compared. Hybrid search is one Query API request: two
 *   prefetches (sparse, dense) fused server-side by RRF or DBSF, or both lists in one batch fused
 *   by the convex combination in process (see {@link QdrantChunkStore.searchHybrid}).
 * - Scope filters are Qdrant filters on the payload (org must match; project = that project or
 *   `project_id` null; document ids `match.any`), applied during the search (filtered HNSW / sparse).
 * - Writes wait for Qdrant to apply them (`wait: true`) and run one at a time in call order.
 *
 * Errors: only {@link ChunkStoreError} (`Internal` wraps a Qdrant failure as `cause`).
 */
export class QdrantChunkStore implements ChunkStore, DenseChunkIndex {
  private writeTail: Promise<unknown> = Promise.resolve();
  private closed = false;
  private space: VectorSpace | null = null;

  private constructor(
    private readonly client: QdrantClient,
    private readonly collection: string,
  ) {}

  /** Connects, creates the collection and payload indexes when missing, reads the recorded vector space. */
  static async open(options: QdrantChunkStoreOptions): Promise<QdrantChunkStore> {
    if (!options.url) throw validation('url must be set');
    if (!/^[A-Za-z0-9_-]{1,200}$/.test(options.collection)) throw validation('collection must be 1-200 letters, digits, _ or -');
    const client = new QdrantClient({ url: options.url, apiKey: options.apiKey, timeout: options.timeoutMs ?? 30_000, checkCompatibility: false });
    const store = new QdrantChunkStore(client, options.collection);
    await wrapEngineCall('Qdrant', 'open', async () => {
      const { exists } = await client.collectionExists(options.collection);
      if (!exists) {
        await client.createCollection(options.collection, {
          vectors: {},
          sparse_vectors: { [SPARSE_VECTOR]: { modifier: 'idf' } },
        });
      }
      for (const field of ['org_id', 'project_id', 'document_id']) {
        await client.createPayloadIndex(options.collection, {
          wait: true,
          field_name: field,
          field_schema: field === 'org_id' ? { type: 'keyword', is_tenant: true } : 'keyword',
        });
      }
      // `order_by` of a scroll needs a payload index that supports ranges on its key (Qdrant
      // "Order points by payload key"): an integer index with `range` on chunk_index, for
      // listDocumentChunks. Idempotent, so an existing collection gets it at the next start.
      await client.createPayloadIndex(options.collection, {
        wait: true,
        field_name: 'chunk_index',
        field_schema: { type: 'integer', lookup: false, range: true },
      });
      const [meta] = await client.retrieve(options.collection, { ids: [META_POINT_ID], with_payload: true });
      const p = meta?.payload as { model?: string; dimensions?: number } | undefined;
      store.space = p?.model && p.dimensions ? { model: p.model, dimensions: p.dimensions } : null;
    });
    return store;
  }

  async replaceDocumentChunks(orgId: string, documentId: string, chunks: StoredChunk[]): Promise<void> {
    const points = validateDocumentChunks(orgId, documentId, chunks, validateChunk).map((c) => ({
      id: pointId(orgId, c.id),
      vector: { [SPARSE_VECTOR]: chunkSparseVector(c) },
      payload: toPayload(c) as unknown as Record<string, unknown>,
    }));
    await this.write('replaceDocumentChunks', async () => {
      // Upsert first, then delete the document's points not in the new set: a search sees the
      // old or the new chunks (briefly both for re-chunked documents), never none.
      for (let i = 0; i < points.length; i += UPSERT_BATCH) {
        await this.client.upsert(this.collection, { wait: true, points: points.slice(i, i + UPSERT_BATCH) });
      }
      await this.client.delete(this.collection, {
        wait: true,
        filter: { must: docFilter(orgId, [documentId]), must_not: [{ has_id: points.map((p) => p.id) }] },
      });
    });
  }

  async deleteDocuments(orgId: string, documentIds: string[]): Promise<number> {
    requireString('orgId', orgId);
    const ids = requireStringArray('documentIds', documentIds);
    if (ids.length === 0) return 0;
    return this.write('deleteDocuments', async () => {
      const filter = { must: docFilter(orgId, ids) };
      const { count } = await this.client.count(this.collection, { filter, exact: true });
      if (count > 0) await this.client.delete(this.collection, { wait: true, filter });
      return count;
    });
  }

  async countChunks(orgId: string, documentId: string): Promise<number> {
    requireString('orgId', orgId);
    requireString('documentId', documentId);
    return this.read(
      'countChunks',
      async () => (await this.client.count(this.collection, { filter: { must: docFilter(orgId, [documentId]) }, exact: true })).count,
    );
  }

  async search(query: string, scope: SearchScope, topK: number): Promise<SearchHit[]> {
    if (typeof query !== 'string') throw validation('query must be a string');
    requireTopK(topK);
    const filter = scopeFilter(scope);
    const sparse = querySparseVector(query);
    if (!sparse) return [];
    return this.read('search', async () => {
      const res = await this.client.query(this.collection, { query: sparse, using: SPARSE_VECTOR, filter, limit: topK, with_payload: true });
      return toHits(res.points);
    });
  }

  async getChunks(orgId: string, chunkIds: string[]): Promise<StoredChunk[]> {
    requireString('orgId', orgId);
    const ids = requireStringArray('chunkIds', chunkIds);
    if (ids.length === 0) return [];
    return this.read('getChunks', async () => {
      const points = await this.client.retrieve(this.collection, { ids: ids.map((id) => pointId(orgId, id)), with_payload: true });
      const byId = new Map<string, StoredChunk>();
      for (const p of points) {
        const payload = p.payload as unknown as ChunkPayload;
        if (payload?.org_id === orgId) byId.set(payload.chunk_id, fromPayload(payload));
      }
      return ids.flatMap((id) => byId.get(id) ?? []);
    });
  }

  async listDocumentChunks(orgId: string, documentId: string, limit: number, offset: number): Promise<{ chunks: StoredChunk[]; total: number }> {
    requireString('orgId', orgId);
    requireString('documentId', documentId);
    requirePage(limit, offset);
    return this.read('listDocumentChunks', async () => {
      // Qdrant orders the document's points by chunk_index (`order_by` on the range index created
      // by open()) and returns the ids of the first offset + limit, without texts; only the page's
      // points are then retrieved. `order_by` disables offset-by-id pagination, so one scroll
      // request reads all the ids up to the page's end; the total is an exact count on the same filter.
      const filter = { must: docFilter(orgId, [documentId]) };
      const { count: total } = await this.client.count(this.collection, { filter, exact: true });
      if (offset >= total) return { chunks: [], total };
      const ordered = await this.client.scroll(this.collection, {
        filter,
        limit: Math.min(offset + limit, total),
        order_by: { key: 'chunk_index', direction: 'asc' },
        with_payload: false,
        with_vector: false,
      });
      const wanted = ordered.points.slice(offset, offset + limit).map((p) => p.id);
      if (wanted.length === 0) return { chunks: [], total };
      const points = await this.client.retrieve(this.collection, { ids: wanted, with_payload: true, with_vector: false });
      const chunks = points
        .map((p) => p.payload as unknown as ChunkPayload)
        .filter((p) => p?.org_id === orgId && p.document_id === documentId)
        .map(fromPayload)
        .sort((a, b) => a.chunkIndex - b.chunkIndex);
      return { chunks, total };
    });
  }

  async vectorSpace(): Promise<VectorSpace | null> {
    this.assertOpen();
    return this.space;
  }

  async resetVectorSpace(space: VectorSpace): Promise<void> {
    requireString('space.model', space.model);
    if (!Number.isInteger(space.dimensions) || space.dimensions < 1) throw validation('space.dimensions must be a positive integer');
    await this.write('resetVectorSpace', async () => {
      const info = await this.client.getCollection(this.collection);
      const vectors = info.config.params.vectors as Record<string, unknown> | undefined;
      for (const name of Object.keys(vectors ?? {})) {
        if (name.startsWith('dense_')) await this.client.deleteVectorName(this.collection, name, { wait: true });
      }
      await this.client.createVectorName(this.collection, denseName(space), { dense: { size: space.dimensions, distance: 'Cosine' } }, { wait: true });
      await this.client.upsert(this.collection, {
        wait: true,
        points: [{ id: META_POINT_ID, vector: {}, payload: { org_id: META_ORG, model: space.model, dimensions: space.dimensions } }],
      });
      this.space = space;
    });
  }

  async upsertVectors(orgId: string, documentId: string, vectors: ChunkVector[]): Promise<number> {
    requireString('orgId', orgId);
    requireString('documentId', documentId);
    const space = this.space;
    if (!space) throw validation('no vector space is set');
    for (const v of vectors) {
      if (!Array.isArray(v.vector) || v.vector.length !== space.dimensions) throw validation(`vectors must have ${space.dimensions} dimensions`);
    }
    return this.write('upsertVectors', async () => {
      const existing = new Set(
        (
          await this.getChunks(
            orgId,
            vectors.map((v) => v.chunkId),
          )
        )
          .filter((c) => c.documentId === documentId)
          .map((c) => c.id),
      );
      const points = vectors.filter((v) => existing.has(v.chunkId)).map((v) => ({ id: pointId(orgId, v.chunkId), vector: { [denseName(space)]: v.vector } }));
      for (let i = 0; i < points.length; i += UPSERT_BATCH) {
        await this.client.updateVectors(this.collection, { wait: true, points: points.slice(i, i + UPSERT_BATCH) });
      }
      return points.length;
    });
  }

  async searchDense(vector: number[], scope: SearchScope, topK: number): Promise<SearchHit[]> {
    requireTopK(topK);
    const filter = scopeFilter(scope);
    const space = this.space;
    if (!space || vector.length !== space.dimensions) throw validation('query vector does not match the vector space');
    return this.read('searchDense', async () => {
      const res = await this.client.query(this.collection, { query: vector, using: denseName(space), filter, limit: topK, with_payload: true });
      return toHits(res.points);
    });
  }

  /**
   * Hybrid search in one Query API request: the sparse (BM25) and dense lists, `candidates` deep
   * each, fused as `fusion` says.
   * - `rrf` and `dbsf`: fused server-side (`query: { rrf: { k } }` or `{ fusion: 'dbsf' }` over
   *   two prefetches; `rrf` with a k needs Qdrant ≥ 1.16).
   * - `convex`: Qdrant has no server-side equivalent (its formula queries cannot see a list's best
   *   score, which the normalisation needs), so both lists come back in one `query/batch` request
   *   and are fused here by the same function as on the embedded store ({@link fuse}).
   */
  async searchHybrid(
    query: string,
    vector: number[],
    scope: SearchScope,
    topK: number,
    candidates: number,
    fusion: FusionSettings = DEFAULT_FUSION,
  ): Promise<SearchHit[]> {
    requireTopK(topK);
    const filter = scopeFilter(scope);
    const sparse = querySparseVector(query);
    const space = this.space;
    if (!space || vector.length !== space.dimensions) throw validation('query vector does not match the vector space');
    const limit = Math.max(topK, candidates);
    return this.read('searchHybrid', async () => {
      const lexicalRequest = sparse ? { query: sparse, using: SPARSE_VECTOR, filter, limit } : null;
      const denseRequest = { query: vector, using: denseName(space), filter, limit };
      if (fusion.method === 'convex') {
        const searches = [...(lexicalRequest ? [lexicalRequest] : []), denseRequest].map((r) => ({ ...r, with_payload: true }));
        const results = await this.client.queryBatch(this.collection, { searches });
        const lists = results.map((r) => toHits(r.points));
        const [lexical, dense] = lexicalRequest ? lists : [[], lists[0]];
        return fuse(lexical, dense, topK, fusion);
      }
      const prefetch = [...(lexicalRequest ? [lexicalRequest] : []), denseRequest];
      const fusionQuery = fusion.method === 'rrf' ? { rrf: { k: fusion.k } } : { fusion: 'dbsf' as const };
      const res = await this.client.query(this.collection, { prefetch, query: fusionQuery, filter, limit: topK, with_payload: true });
      return toHits(res.points);
    });
  }

  async documentChunks(orgId: string, documentId: string): Promise<StoredChunk[]> {
    requireString('orgId', orgId);
    requireString('documentId', documentId);
    return this.read('documentChunks', async () => {
      const out: StoredChunk[] = [];
      let offset: string | number | undefined | null = undefined;
      do {
        const page: { points: { payload?: unknown }[]; next_page_offset?: unknown } = await this.client.scroll(this.collection, {
          filter: { must: docFilter(orgId, [documentId]) },
          limit: 256,
          offset: offset ?? undefined,
          with_payload: true,
        });
        out.push(...page.points.map((p) => fromPayload(p.payload as ChunkPayload)));
        offset = (page.next_page_offset as string | number | null | undefined) ?? null;
      } while (offset !== null);
      return out.sort((a, b) => a.chunkIndex - b.chunkIndex);
    });
  }

  async listDocuments(): Promise<{ orgId: string; documentId: string }[]> {
    return this.read('listDocuments', async () => {
      const seen = new Map<string, { orgId: string; documentId: string }>();
      let offset: string | number | undefined | null = undefined;
      do {
        const page: { points: { payload?: unknown }[]; next_page_offset?: unknown } = await this.client.scroll(this.collection, {
          filter: { must_not: [{ key: 'org_id', match: { value: META_ORG } }] },
          limit: 1000,
          offset: offset ?? undefined,
          with_payload: ['org_id', 'document_id'],
        });
        for (const p of page.points) {
          const { org_id, document_id } = p.payload as { org_id: string; document_id: string };
          seen.set(`${org_id}\u0000${document_id}`, { orgId: org_id, documentId: document_id });
        }
        offset = (page.next_page_offset as string | number | null | undefined) ?? null;
      } while (offset !== null);
      return [...seen.values()];
    });
  }

  /** Deletes the whole collection (tests and `kbctl` tooling only). */
  async dropCollection(): Promise<void> {
    await wrapEngineCall('Qdrant', 'dropCollection', () => this.client.deleteCollection(this.collection));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.writeTail.catch(() => undefined);
  }

  private write<T>(op: string, fn: () => Promise<T>): Promise<T> {
    this.assertOpen();
    const run = this.writeTail.then(() => wrapEngineCall('Qdrant', op, fn));
    this.writeTail = run.catch(() => undefined);
    return run;
  }

  private read<T>(op: string, fn: () => Promise<T>): Promise<T> {
    this.assertOpen();
    return wrapEngineCall('Qdrant', op, fn);
  }

  private assertOpen(): void {
    if (this.closed) throw new ChunkStoreError(ChunkStoreErrorCode.Unavailable, 'chunk store is closed');
  }
}

// ---- helpers ----

/** UUID-shaped SHA-1 of (org, chunk id): the point id (RFC 4122 §4.3 layout). */
export function pointId(orgId: string, chunkId: string): string {
  const h = createHash('sha1').update(`${orgId}\u0000${chunkId}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${((parseInt(h[16], 16) & 3) | 8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** Name of the dense vector of a space: dimensions plus a hash of the model name. */
export function denseName(space: VectorSpace): string {
  return `dense_${space.dimensions}_${createHash('sha1').update(space.model).digest('hex').slice(0, 12)}`;
}

type Condition = Record<string, unknown>;

function docFilter(orgId: string, documentIds: string[]): Condition[] {
  return [
    { key: 'org_id', match: { value: orgId } },
    documentIds.length === 1 ? { key: 'document_id', match: { value: documentIds[0] } } : { key: 'document_id', match: { any: documentIds } },
  ];
}

/** The Qdrant filter of a search scope (same rules as the embedded store's SQL predicate). */
export function scopeFilter(scope: SearchScope): { must: Condition[]; must_not?: Condition[] } {
  if (scope === null || typeof scope !== 'object') throw validation('scope must be an object');
  requireString('scope.orgId', scope.orgId);
  const must: Condition[] = [{ key: 'org_id', match: { value: scope.orgId } }];
  if (scope.projectId !== undefined && scope.projectId !== null) {
    if (typeof scope.projectId !== 'string') throw validation('scope.projectId must be a string or null');
    must.push({ should: [{ key: 'project_id', match: { value: scope.projectId } }, { is_null: { key: 'project_id' } }] });
  }
  if (scope.documentIds !== undefined) {
    const ids = requireStringArray('scope.documentIds', scope.documentIds);
    if (ids.length > 0) must.push({ key: 'document_id', match: { any: ids } });
  }
  if (scope.excludeDocumentIds !== undefined) {
    const ids = requireStringArray('scope.excludeDocumentIds', scope.excludeDocumentIds);
    if (ids.length > 0) return { must, must_not: [{ key: 'document_id', match: { any: ids } }] };
  }
  return { must };
}

function toPayload(c: StoredChunk): ChunkPayload {
  return {
    org_id: c.orgId,
    project_id: c.projectId,
    document_id: c.documentId,
    chunk_id: c.id,
    file_name: c.fileName,
    chunk_index: c.chunkIndex,
    text: c.text,
    heading_path: c.headingPath,
    start_page: c.startPage,
    end_page: c.endPage,
    page_spans: c.pageSpans.map((s) => ({ page: s.page, offset: s.offset })),
    word_boxes: packWordBoxes(c.wordBoxes),
  };
}

function fromPayload(p: ChunkPayload): StoredChunk {
  const fields = ['org_id', 'project_id', 'document_id', 'file_name', 'chunk_index', 'text', 'heading_path', 'start_page', 'end_page', 'page_spans'] as const;
  return { id: p.chunk_id, ...pickCamelFields(p, fields, null), wordBoxes: unpackWordBoxes(p.word_boxes) };
}

function toHits(points: { score: number; payload?: unknown }[]): SearchHit[] {
  return points
    .filter((p) => (p.payload as ChunkPayload | undefined)?.org_id !== undefined)
    .map((p, i) => ({ chunk: fromPayload(p.payload as ChunkPayload), score: p.score, rank: i + 1 }));
}

/** The shared structural checks, plus: the metadata point's org id is reserved. */
function validateChunk(chunk: StoredChunk, i: number): void {
  validateStoredChunk(chunk, i);
  if (chunk.orgId === META_ORG) throw validation(`chunks[${i}].orgId is reserved`);
}

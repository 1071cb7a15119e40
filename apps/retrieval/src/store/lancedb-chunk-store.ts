/**
 * The embedded LanceDB adapter of the {@link ChunkStore} port: the store class, its options and
 * its open/close life cycle, the port's reads and writes. Its parts live in `./lancedb/`:
 * `schema` (table layout, row mapping, column upgrades), `sql` (filters, quoting, query terms),
 * `write-queue` (write order, group commit, calls in flight), `group-commit` (what a group
 * commit writes), `optimize-scheduler` (when optimizes run) and `table-maintenance` (indexes,
 * version cleanup). The names they exported from this file before are re-exported here.
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import * as lancedb from '@lancedb/lancedb';
import {
  ChunkStore,
  requirePage,
  ChunkStoreError,
  ChunkStoreErrorCode,
  ChunkVector,
  DenseChunkIndex,
  DenseIdSearch,
  ScoredId,
  VectorSpace,
  SearchHit,
  SearchScope,
  StoredChunk,
} from './chunk-store';
import { requireString, requireStringArray, requireTopK, validateDocumentChunks, validation, wrapEngineCall } from './store-input';
import { LanceDbGroupCommitter, replaceRowsWhere } from './lancedb/group-commit';
import { ChunkStoreLogger, DEFAULT_OPTIMIZE_DELAY_MS, OptimizeScheduler, stderrLogger } from './lancedb/optimize-scheduler';
import {
  addSearchTextColumn,
  addWordBoxesColumn,
  checkSchema,
  CHUNK_SCHEMA,
  ChunkRow,
  CHUNKS_TABLE,
  COLUMNS,
  fromRow,
  FTS_COLUMN,
  NEW_TABLE_STORAGE,
  toRow,
  VECTOR_SPACE_FILE,
  vectorSchema,
  VECTORS_TABLE,
  VectorTableHandle,
} from './lancedb/schema';
import { ID_BATCH, MAX_CHUNKS_PER_DOCUMENT, sanitizeQuery, scopeFilter, sqlString, validateChunk } from './lancedb/sql';
import {
  cleanupCutoff,
  DEFAULT_RETAIN_VERSIONS_MS,
  ensureFtsIndex,
  ensureScalarIndexes,
  ensureVectorIndex,
  scopeSearchedExactly,
  VECTOR_INDEX_MIN_NPROBES,
  vectorIndexNprobes,
  vectorIndexPartitions,
  vectorScopeIndexes,
} from './lancedb/table-maintenance';
import { WriteQueue } from './lancedb/write-queue';

export {
  type ChunkStoreLogger,
  DEFAULT_OPTIMIZE_DELAY_MS,
  MAX_INDEX_LAG_MS,
  MAX_OPTIMIZE_CONFLICTS,
  MAX_OPTIMIZE_DELAY_MS,
  OPTIMIZE_COST_FACTOR,
} from './lancedb/optimize-scheduler';
export { CHUNKS_TABLE, FTS_COLUMN, VECTORS_TABLE } from './lancedb/schema';
export { sanitizeQuery, scopeFilter, sqlString } from './lancedb/sql';
export {
  DEFAULT_RETAIN_VERSIONS_MS,
  scopeSearchedExactly,
  FTS_TOKENIZER,
  VECTOR_EXACT_MAX_ROWS,
  VECTOR_INDEX_MIN_NPROBES,
  VECTOR_INDEX_MIN_ROWS,
  VECTOR_INDEX_PROBE_SHARE,
  VECTOR_INDEX_RETRAIN_GROWTH,
  vectorIndexName,
  vectorIndexNprobes,
  vectorIndexPartitions,
} from './lancedb/table-maintenance';
export { MAX_GROUP_CALLS, MAX_GROUP_ROWS } from './lancedb/write-queue';

/** Options of {@link LanceDbChunkStore.open}. */
export interface LanceDbChunkStoreOptions {
  /**
   * Quiet period in ms after the latest write before new rows are folded into the FTS index (see
   * {@link DEFAULT_OPTIMIZE_DELAY_MS}, {@link MAX_INDEX_LAG_MS}, {@link OPTIMIZE_COST_FACTOR}); `false` disables automatic
   * optimization: call {@link LanceDbChunkStore.optimize} yourself, and soon, because every write
   * adds a small fragment and writes slow down as fragments pile up (measured: ~230 ms per
   * replace after 2,400 un-optimized writes vs ~15 ms). Default 1000.
   */
  optimizeDelayMs?: number | false;
  /** Age in ms of old table versions removed by optimize. Default 10 000. */
  retainVersionsMs?: number;
  /** Receives failures of background optimization. Default: one JSON line on stderr. */
  logger?: ChunkStoreLogger;
  /**
   * `true` (default): concurrent writes are group-committed (see {@link LanceDbChunkStore}).
   * `false`: the write path before group commit, kept as the same-run baseline of
   * `npm run bench:index`: every `replaceDocumentChunks` is its own `mergeInsert` with
   * "delete rows of this document not in the new set" (a join over the whole table, so cost grows
   * with the table), every delete and vector upsert its own commit. (The optimize schedule is the
   * current one either way.)
   */
  groupCommit?: boolean;
}

/** Index health of the store, for readiness probes, metrics and tests. */
export interface ChunkIndexStatus {
  /** Rows in the table. */
  totalRows: number;
  /** Rows covered by the FTS index. */
  indexedRows: number;
  /** Rows searched by a flat scan until the next optimize. */
  unindexedRows: number;
}

/**
 * The embedded {@link ChunkStore}: one LanceDB table in a local directory, with a BM25 full-text
 * index on `text` (tokenizer: {@link FTS_TOKENIZER}).
 *
 * - Persistence: everything lives under the directory given to {@link open}; the store survives
 *   close and reopen. One process must own the directory (LanceDB has no cross-process lock).
 * - Writes (replace, delete, vector upserts, vector space resets) run one at a time through an
 *   in-process promise queue, so concurrent gRPC handlers are safe and calls apply in call order.
 *   Reads run concurrently with writes and see the latest committed version.
 * - Maintenance (`optimize`: compaction, FTS/scalar index update, version cleanup, the vector
 *   index build) runs OUTSIDE the write queue, one job at a time, beside writes and reads: Lance
 *   commits are optimistic, so a write is never blocked by it; an optimize preempted by a
 *   conflicting write is retried ({@link MAX_OPTIMIZE_CONFLICTS}). Old versions are deleted only
 *   once no running call can still read them (see {@link LanceDbChunkStore.optimize}).
 * - Group commit: `replaceDocumentChunks` and `deleteDocuments` calls that arrive while a write is
 *   running wait in one group; when the queue reaches the group, its calls (at most
 *   {@link MAX_GROUP_CALLS} calls and {@link MAX_GROUP_ROWS} rows per commit) are replayed in call
 *   order in memory (the last call on a document wins; a delete counts the chunks the document
 *   has at that point of the order) and the result is written as ONE commit of the chunks table:
 *   an `add` when none of the documents has rows yet (the bulk-indexing case: cost independent of
 *   the table size), else one `mergeInsert` keyed on (org_id, id) that also deletes the rows of
 *   those documents not in the new set. A search therefore sees each document's old chunks or
 *   its new ones, never both, never neither. A lone caller is committed at once (no timer); a
 *   burst of concurrent callers shares one commit. Consecutive `upsertVectors` calls are grouped
 *   the same way. If a group's commit fails, its calls are retried one by one, so one bad call
 *   fails alone. Chunk ids must be unique within an org (the port's rule): an id that collides
 *   with another document's chunk is not detected on the `add` path.
 * - Vectors follow their chunks: before a commit replaces or deletes a document's rows, that
 *   document's vectors are deleted (a separate, earlier commit of the vectors table). A crash
 *   between the two leaves chunks without vectors (lexical only until re-embedded), never a
 *   vector describing text that is gone.
 * - Freshness: new rows are searchable as soon as the write returns (flat scan of unindexed rows,
 *   see {@link DEFAULT_OPTIMIZE_DELAY_MS}); a background optimize folds them into the index
 *   after a quiet period, at the latest {@link MAX_INDEX_LAG_MS} after the first of them under
 *   continuous writes (the gap adapts to the optimize cost, {@link OPTIMIZE_COST_FACTOR}).
 * - Scope filters are SQL predicates given to LanceDB's `where`, which LanceDB applies before the
 *   top-k (prefilter); string values are quoted with {@link sqlString}.
 *
 * Errors: every method throws only {@link ChunkStoreError} (`Validation` for bad arguments,
 * `Unavailable` after close, `Internal` wrapping a LanceDB failure as `cause`).
 */
export class LanceDbChunkStore implements ChunkStore, DenseChunkIndex, DenseIdSearch {
  /** Directories held by an open store of this process (a second store would race commits). */
  private static readonly openDirs = new Set<string>();
  /** Writes one at a time, group commit, and the calls in flight (see {@link WriteQueue}). */
  private readonly queue: WriteQueue;
  /** What a group commit writes, and the per-document registry it keeps. */
  private readonly commits: LanceDbGroupCommitter;
  /** When optimizes run, and the maintenance queue (see {@link OptimizeScheduler}). */
  private readonly scheduler: OptimizeScheduler<VectorTableHandle>;
  private closing: Promise<void> | undefined;
  /** Dense vectors of the current vector space (table {@link VECTORS_TABLE}), when one is set. */
  private vectors: VectorTableHandle | null = null;
  /** IVF partitions a dense search probes, updated whenever the vector index is brought up to date. */
  private vectorNprobes = VECTOR_INDEX_MIN_NPROBES;
  /** IVF partitions of the vector index (0 while there is none), updated with {@link vectorNprobes}. */
  private vectorPartitions = 0;

  private constructor(
    private readonly dir: string,
    private readonly db: lancedb.Connection,
    private readonly table: lancedb.Table,
    private readonly ftsIndexName: string,
    optimizeDelayMs: number | false,
    private readonly retainVersionsMs: number,
    logger: ChunkStoreLogger,
    private readonly groupCommit: boolean,
  ) {
    this.scheduler = new OptimizeScheduler<VectorTableHandle>(optimizeDelayMs, logger, {
      optimize: (chunks, vectors) => this.optimizeTables(chunks, vectors),
      currentVectors: () => this.vectors,
      exclusive: (fn) => this.queue.write('optimize', fn),
      isClosing: () => this.closing !== undefined,
    });
    this.commits = new LanceDbGroupCommitter(
      table,
      () => this.vectors,
      (vectors) => this.scheduler.markWritten(vectors),
    );
    this.queue = new WriteQueue(() => this.assertOpen(), this.commits);
  }

  /**
   * Opens (creating if needed) the store in `dir`. Creates the table and the FTS index when
   * missing, rebuilds the index when its tokenizer differs from {@link FTS_TOKENIZER} (a full
   * re-index: cost proportional to the corpus), and schedules an optimize when rows are waiting
   * to be indexed (e.g. after a crash).
   * @throws ChunkStoreError `Validation` for bad options, `Unavailable` when another store of
   *   this process has `dir` open, `Internal` when LanceDB fails or the existing table lacks a
   *   column of the expected layout.
   */
  static async open(dir: string, options: LanceDbChunkStoreOptions = {}): Promise<LanceDbChunkStore> {
    requireString('dir', dir);
    const optimizeDelayMs = options.optimizeDelayMs ?? DEFAULT_OPTIMIZE_DELAY_MS;
    if (optimizeDelayMs !== false && !(Number.isFinite(optimizeDelayMs) && optimizeDelayMs >= 0)) {
      throw validation('optimizeDelayMs must be a non-negative number or false');
    }
    const retainVersionsMs = options.retainVersionsMs ?? DEFAULT_RETAIN_VERSIONS_MS;
    if (!(Number.isFinite(retainVersionsMs) && retainVersionsMs >= 0)) {
      throw validation('retainVersionsMs must be a non-negative number');
    }
    const logger = options.logger ?? stderrLogger;
    const absDir = resolve(dir);
    if (LanceDbChunkStore.openDirs.has(absDir)) {
      throw new ChunkStoreError(ChunkStoreErrorCode.Unavailable, `chunk store directory is already open: ${absDir}`);
    }
    LanceDbChunkStore.openDirs.add(absDir);

    return wrapEngineCall('LanceDB', 'open', async () => {
      await mkdir(absDir, { recursive: true });
      const db = await lancedb.connect(absDir);
      try {
        const table = (await db.tableNames()).includes(CHUNKS_TABLE)
          ? await db.openTable(CHUNKS_TABLE)
          : await db.createEmptyTable(CHUNKS_TABLE, CHUNK_SCHEMA, { mode: 'create', existOk: true, ...NEW_TABLE_STORAGE });
        await addWordBoxesColumn(table);
        await checkSchema(table);
        await addSearchTextColumn(table);
        const { name, unindexedRows } = await ensureFtsIndex(table);
        await ensureScalarIndexes(table);
        const store = new LanceDbChunkStore(absDir, db, table, name, optimizeDelayMs, retainVersionsMs, logger, options.groupCommit ?? true);
        await store.loadVectorSpace();
        if (unindexedRows > 0) {
          store.scheduler.markUnindexed();
        }
        return store;
      } catch (err) {
        db.close();
        throw err;
      }
    }).catch((err: unknown) => {
      LanceDbChunkStore.openDirs.delete(absDir);
      throw err;
    });
  }

  async replaceDocumentChunks(orgId: string, documentId: string, chunks: StoredChunk[]): Promise<void> {
    const rows = validateDocumentChunks(orgId, documentId, chunks, validateChunk).map(toRow);
    if (this.groupCommit) {
      await this.queue.enqueue({ kind: 'replace', orgId, documentId, rows });
      return;
    }
    const docFilter = `org_id = ${sqlString(orgId)} AND document_id = ${sqlString(documentId)}`;
    await this.queue.write('replaceDocumentChunks', async () => {
      await replaceRowsWhere(this.table, docFilter, rows);
      // The document's text changed: its vectors describe the old chunks.
      if (this.vectors) await this.vectors.table.delete(docFilter);
      this.scheduler.markWritten();
    });
  }

  async deleteDocuments(orgId: string, documentIds: string[]): Promise<number> {
    requireString('orgId', orgId);
    const ids = requireStringArray('documentIds', documentIds);
    if (ids.length === 0) return 0;
    if (this.groupCommit) return this.queue.enqueue({ kind: 'delete', orgId, documentIds: ids });
    return this.queue.write('deleteDocuments', async () => {
      const filter = `org_id = ${sqlString(orgId)} AND document_id IN (${ids.map(sqlString).join(', ')})`;
      const result = await this.table.delete(filter);
      if (this.vectors) await this.vectors.table.delete(filter);
      if (result.numDeletedRows > 0) this.scheduler.markWritten();
      return result.numDeletedRows;
    });
  }

  async countChunks(orgId: string, documentId: string): Promise<number> {
    requireString('orgId', orgId);
    requireString('documentId', documentId);
    return this.queue.read('countChunks', () => this.table.countRows(`org_id = ${sqlString(orgId)} AND document_id = ${sqlString(documentId)}`));
  }

  async search(query: string, scope: SearchScope, topK: number): Promise<SearchHit[]> {
    if (typeof query !== 'string') throw validation('query must be a string');
    requireTopK(topK);
    const filter = scopeFilter(scope);
    const terms = sanitizeQuery(query);
    if (terms === '') return [];
    return this.queue.read('search', async () => {
      // LanceDB 0.37.1 quirk (measured with explainPlan): while the FTS index covers no live row
      // (a new table before its first optimize, or after every indexed row was deleted), the plan
      // is FlatMatchQuery -> GlobalLimit with NO sort, so `limit(k)` returns the first k matches
      // in scan order, not the best k. With >= 1 indexed row the plan is MatchQuery (index top-k)
      // or a union with a TopK sort, both correct. So in that state fetch every in-scope match
      // (limit = table size: a search without limit gets LanceDB's default of 10) and rank here;
      // the state lasts until the next optimize (about a second by default).
      // indexStats and an unfiltered countRows are metadata reads (~0.06 ms).
      const stats = await this.table.indexStats(this.ftsIndexName);
      const indexCoversNothing = (stats?.numIndexedRows ?? 0) === 0;
      const limit = indexCoversNothing ? Math.max(topK, await this.table.countRows()) : topK;
      const rows = (await this.table
        .query()
        .fullTextSearch(new lancedb.MatchQuery(terms, FTS_COLUMN))
        .where(filter)
        .select([...COLUMNS, '_score'])
        .limit(limit)
        .toArray()) as (ChunkRow & { _score: number })[];
      return rows
        .map((row) => ({ chunk: fromRow(row), score: Number(row._score) }))
        .sort((a, b) => b.score - a.score)
        .slice(0, topK)
        .map((hit, i) => ({ ...hit, rank: i + 1 }));
    });
  }

  async getChunks(orgId: string, chunkIds: string[]): Promise<StoredChunk[]> {
    requireString('orgId', orgId);
    const ids = requireStringArray('chunkIds', chunkIds);
    if (ids.length === 0) return [];
    return this.queue.read('getChunks', async () => {
      const byId = new Map<string, StoredChunk>();
      for (let i = 0; i < ids.length; i += ID_BATCH) {
        const batch = ids.slice(i, i + ID_BATCH);
        const rows = (await this.table
          .query()
          .where(`org_id = ${sqlString(orgId)} AND id IN (${batch.map(sqlString).join(', ')})`)
          .select(COLUMNS)
          .limit(batch.length)
          .toArray()) as ChunkRow[];
        for (const row of rows) byId.set(row.id, fromRow(row));
      }
      return ids.flatMap((id) => byId.get(id) ?? []);
    });
  }

  async listDocumentChunks(orgId: string, documentId: string, limit: number, offset: number): Promise<{ chunks: StoredChunk[]; total: number }> {
    requireString('orgId', orgId);
    requireString('documentId', documentId);
    requirePage(limit, offset);
    return this.queue.read('listDocumentChunks', async () => {
      // LanceDB queries have no ORDER BY: read the (id, chunk_index) pairs of the document (two
      // small columns, on the document_id scalar index), order them here, then fetch the page.
      const where = `org_id = ${sqlString(orgId)} AND document_id = ${sqlString(documentId)}`;
      const keys = (await this.table.query().where(where).select(['id', 'chunk_index']).limit(MAX_CHUNKS_PER_DOCUMENT).toArray()) as {
        id: string;
        chunk_index: number;
      }[];
      keys.sort((a, b) => a.chunk_index - b.chunk_index);
      const ids = keys.slice(offset, offset + limit).map((k) => k.id);
      if (ids.length === 0) return { chunks: [], total: keys.length };
      const rows = (await this.table
        .query()
        .where(`${where} AND id IN (${ids.map(sqlString).join(', ')})`)
        .select(COLUMNS)
        .limit(ids.length)
        .toArray()) as ChunkRow[];
      return { chunks: rows.map(fromRow).sort((a, b) => a.chunkIndex - b.chunkIndex), total: keys.length };
    });
  }

  // ---- dense vectors (DenseChunkIndex) ----

  async vectorSpace(): Promise<VectorSpace | null> {
    this.assertOpen();
    return this.vectors?.space ?? null;
  }

  /**
   * Drops the vectors table and creates an empty one for `space` (table {@link VECTORS_TABLE}:
   * chunk id, org, project, document, `vector` FixedSizeList<Float32>[dimensions]); records the
   * space in `vector-space.json` (written to a temporary file, then renamed).
   */
  async resetVectorSpace(space: VectorSpace): Promise<void> {
    requireString('space.model', space?.model);
    if (!Number.isInteger(space.dimensions) || space.dimensions < 1 || space.dimensions > 65_536) {
      throw validation('space.dimensions must be a positive integer');
    }
    // Inside the maintenance queue too: no optimize may be working on the table being dropped.
    await this.queue.write('resetVectorSpace', () =>
      this.scheduler.maintain(async () => {
        this.vectors?.table.close();
        this.vectors = null;
        const table = await this.db.createEmptyTable(VECTORS_TABLE, vectorSchema(space.dimensions), { mode: 'overwrite', ...NEW_TABLE_STORAGE });
        await ensureScalarIndexes(table, vectorScopeIndexes);
        const file = join(this.dir, VECTOR_SPACE_FILE);
        await writeFile(`${file}.tmp`, JSON.stringify({ model: space.model, dimensions: space.dimensions }));
        await rename(`${file}.tmp`, file);
        this.vectors = { space: { model: space.model, dimensions: space.dimensions }, table };
        this.vectorNprobes = VECTOR_INDEX_MIN_NPROBES;
        this.vectorPartitions = 0;
        this.commits.vectorSpaceReset();
      }),
    );
  }

  async upsertVectors(orgId: string, documentId: string, vectors: ChunkVector[]): Promise<number> {
    requireString('orgId', orgId);
    requireString('documentId', documentId);
    if (!Array.isArray(vectors)) throw validation('vectors must be an array');
    const current = this.vectors;
    if (!current) throw validation('no vector space is set');
    for (const [i, v] of vectors.entries()) {
      if (!Array.isArray(v?.vector) || v.vector.length !== current.space.dimensions || !v.vector.every(Number.isFinite)) {
        throw validation(`vectors[${i}] must be ${current.space.dimensions} finite numbers`);
      }
    }
    if (vectors.length === 0) return 0;
    if (this.groupCommit) return this.queue.enqueue({ kind: 'vectors', orgId, documentId, vectors, space: current });
    return this.queue.write('upsertVectors', async () => {
      if (this.vectors !== current) return 0; // the space was reset meanwhile: these vectors are of the old one
      const chunks = await this.documentChunksNow(orgId, documentId);
      const byId = new Map(chunks.map((c) => [c.id, c]));
      const rows = vectors
        .filter((v) => byId.has(v.chunkId))
        .map((v) => ({ id: v.chunkId, org_id: orgId, project_id: byId.get(v.chunkId)!.projectId, document_id: documentId, vector: v.vector }));
      if (rows.length === 0) return 0;
      await current.table.mergeInsert(['org_id', 'id']).whenMatchedUpdateAll().whenNotMatchedInsertAll().execute(rows);
      this.scheduler.markWritten(true); // compacts the vectors table too (optimizeNow)
      return rows.length;
    });
  }

  /**
   * Cosine nearest-neighbour search over the vectors in `scope` (LanceDB prefilters with the same
   * predicate as the BM25 search), then the chunks are read by id. Exact (flat) until the vectors
   * table reaches {@link VECTOR_INDEX_MIN_ROWS}; then through an IVF_FLAT index
   * ({@link vectorIndexNprobes} partitions probed), plus a flat scan of rows not yet indexed,
   * unless the scope is small ({@link scopeSearchedExactly}: at most
   * {@link VECTOR_EXACT_MAX_ROWS} vectors, and no more than the IVF search would compare, which
   * reads every row of the probed partitions, other orgs' included): then an exact search of the
   * scope's rows alone, recall 1. Two row counts decide (bitmap index reads, under a
   * millisecond). `score` = cosine similarity (1 − cosine distance).
   */
  async searchDense(vector: number[], scope: SearchScope, topK: number): Promise<SearchHit[]> {
    const hits = await this.searchDenseIds(vector, scope, topK);
    const chunks = new Map(
      (
        await this.getChunks(
          scope.orgId,
          hits.map((h) => h.id),
        )
      ).map((c) => [c.id, c]),
    );
    return hits.filter((h) => chunks.has(h.id)).map((h, i) => ({ chunk: chunks.get(h.id)!, score: h.score, rank: i + 1 }));
  }

  /** {@link searchDense}'s vector search alone (see {@link DenseIdSearch}): ids and cosine similarities. */
  async searchDenseIds(vector: number[], scope: SearchScope, topK: number): Promise<ScoredId[]> {
    requireTopK(topK);
    const filter = scopeFilter(scope);
    const current = this.vectors;
    if (!current) return [];
    if (!Array.isArray(vector) || vector.length !== current.space.dimensions) throw validation('query vector does not match the vector space');
    return this.queue.read('searchDense', async () => {
      const [partitions, nprobes] = [this.vectorPartitions, this.vectorNprobes];
      const exact =
        partitions === 0 || scopeSearchedExactly(...(await Promise.all([current.table.countRows(filter), current.table.countRows()])), partitions, nprobes);
      const search = current.table.vectorSearch(vector).distanceType('cosine').where(filter).select(['id', '_distance']).limit(topK);
      const rows = (await (exact ? search.bypassVectorIndex() : search.nprobes(nprobes)).toArray()) as { id: string; _distance: number }[];
      return rows.map((r) => ({ id: r.id, score: 1 - Number(r._distance) }));
    });
  }

  async documentChunks(orgId: string, documentId: string): Promise<StoredChunk[]> {
    requireString('orgId', orgId);
    requireString('documentId', documentId);
    return this.queue.read('documentChunks', () => this.documentChunksNow(orgId, documentId));
  }

  async listDocuments(): Promise<{ orgId: string; documentId: string }[]> {
    return this.queue.read('listDocuments', async () => {
      const seen = new Map<string, { orgId: string; documentId: string }>();
      for await (const batch of this.table.query().select(['org_id', 'document_id'])) {
        for (const row of batch.toArray() as unknown as { org_id: string; document_id: string }[]) {
          seen.set(`${row.org_id}\u0000${row.document_id}`, { orgId: row.org_id, documentId: row.document_id });
        }
      }
      return [...seen.values()];
    });
  }

  private async documentChunksNow(orgId: string, documentId: string): Promise<StoredChunk[]> {
    const rows = (await this.table
      .query()
      .where(`org_id = ${sqlString(orgId)} AND document_id = ${sqlString(documentId)}`)
      .select(COLUMNS)
      .limit(MAX_CHUNKS_PER_DOCUMENT)
      .toArray()) as ChunkRow[];
    return rows.map(fromRow).sort((a, b) => a.chunkIndex - b.chunkIndex);
  }

  /** Reads `vector-space.json` and opens the vectors table, if a space was set before. */
  private async loadVectorSpace(): Promise<void> {
    let space: VectorSpace;
    try {
      space = JSON.parse(await readFile(join(this.dir, VECTOR_SPACE_FILE), 'utf8')) as VectorSpace;
    } catch {
      return;
    }
    if (!(await this.db.tableNames()).includes(VECTORS_TABLE)) return;
    const table = await this.db.openTable(VECTORS_TABLE);
    await ensureScalarIndexes(table, vectorScopeIndexes);
    this.vectors = { space, table };
    this.vectorPartitions = await vectorIndexPartitions(table);
    this.vectorNprobes = vectorIndexNprobes(this.vectorPartitions);
  }

  /**
   * Folds every row written before this call into the FTS, scalar and vector indexes, compacts
   * small fragments and deletes old table versions (LanceDB `Table.optimize`), for the chunks
   * table and, when vector writes happened since, the vectors table; builds the vector index once
   * the vectors table reaches {@link VECTOR_INDEX_MIN_ROWS} and trains it again each time the table
   * has grown {@link VECTOR_INDEX_RETRAIN_GROWTH}-fold. Waits for the writes queued before
   * it, then runs beside later writes and searches (they are not blocked); attempts preempted by a
   * conflicting write are retried, the attempt after {@link MAX_OPTIMIZE_CONFLICTS} conflicts
   * inside the write queue.
   *
   * Version cleanup keeps every version that was the latest within the last `retainVersionsMs`,
   * or since the oldest call still running started if that is earlier (Lance deletes by version
   * creation time; a version created long ago can have been the latest a moment ago, when a
   * running search or write read it).
   *
   * Called automatically after writes; exposed for tests, tools and shutdown hooks.
   * @throws ChunkStoreError `Internal` when LanceDB fails (rows stay searchable by flat scan).
   */
  async optimize(): Promise<void> {
    this.scheduler.cancel();
    this.assertOpen();
    await this.queue.idle();
    await this.scheduler.runOptimize();
  }

  /** Row counts of the table and of its FTS index (see {@link ChunkIndexStatus}). */
  async indexStatus(): Promise<ChunkIndexStatus> {
    return this.queue.read('indexStatus', async () => {
      const [totalRows, stats] = await Promise.all([this.table.countRows(), this.table.indexStats(this.ftsIndexName)]);
      return {
        totalRows,
        indexedRows: stats?.numIndexedRows ?? 0,
        unindexedRows: stats?.numUnindexedRows ?? totalRows,
      };
    });
  }

  /**
   * Rejects new calls, waits for running ones (queued writes included), then releases LanceDB.
   * Rows not yet folded into the index stay searchable and are indexed after the next open.
   */
  async close(): Promise<void> {
    if (!this.closing) {
      this.closing = (async () => {
        this.scheduler.cancel();
        await Promise.allSettled([...this.queue.pending(), ...this.scheduler.pending()]);
        try {
          this.vectors?.table.close();
          this.table.close();
          this.db.close();
        } finally {
          LanceDbChunkStore.openDirs.delete(this.dir);
        }
      })();
    }
    return this.closing;
  }

  // ---- internals ----

  /**
   * What one optimize does (called by the {@link OptimizeScheduler}): LanceDB `optimize` of the
   * chunks table (when `chunks`) and of `vectors`, whose vector index is then brought up to date.
   */
  private async optimizeTables(chunks: boolean, vectors: VectorTableHandle | null): Promise<void> {
    if (chunks) await this.table.optimize({ cleanupOlderThan: await cleanupCutoff(this.table, this.retainVersionsMs, this.queue.callStarts()) });
    // The vectors table: compaction of the small fragments each upsert adds, and the vector
    // index (when one exists) brought up to date.
    if (vectors) {
      await vectors.table.optimize({ cleanupOlderThan: await cleanupCutoff(vectors.table, this.retainVersionsMs, this.queue.callStarts()) });
      const partitions = await ensureVectorIndex(vectors.table);
      if (vectors === this.vectors) {
        this.vectorPartitions = partitions;
        this.vectorNprobes = vectorIndexNprobes(partitions);
      }
    }
  }

  private assertOpen(): void {
    if (this.closing) throw new ChunkStoreError(ChunkStoreErrorCode.Unavailable, 'chunk store is closed');
  }
}

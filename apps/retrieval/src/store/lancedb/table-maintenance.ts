/**
 * Upkeep of the LanceDB chunk store's tables: the BM25 (FTS) index and its tokenizer, the scalar
 * indexes on the scope columns, the IVF vector index (when it is built, retrained and how many
 * partitions a search probes), and the cutoff of old-version cleanup. Stateless: the store decides
 * when these run (at open, and in each optimize).
 */
import * as lancedb from '@lancedb/lancedb';
import { ChunkStoreError, ChunkStoreErrorCode } from '../chunk-store';
import { FTS_COLUMN } from './schema';

/**
 * Tokenizer of the BM25 index on `text` (LanceDB 0.37.1 `Index.fts`, Lance's inverted index,
 * whose analyzer chain is tantivy's: base tokenizer, then lowercasing, stemming, stop-word
 * removal and ASCII folding). The query is analyzed by the same chain, so both sides agree.
 * Changing a value rebuilds the index over the whole table at the next `open()`.
 *
 * Values chosen for English technical and regulatory text, checked by measurement on SciFact
 * train (`npm run eval:retrieval`, docs/retrieval.md): without stemming nDCG@10 drops by 0.025;
 * without stop-word removal it rises by only 0.002 (noise), so removal stays (smaller index, and
 * a stop-word-only query matches nothing, as the port promises).
 * - `baseTokenizer: 'simple'`: splits on whitespace and punctuation ("ISO/IEC 27001:2022" →
 *   iso, iec, 27001, 2022), matching what {@link sanitizeQuery} does to the query.
 * - `lowercase`: case carries no meaning for lexical retrieval here ("Fire" = "fire").
 * - `stem` with `language: 'English'`: Snowball English stemmer (rust-stemmers), so
 *   "extinguishers"/"extinguisher" and "inspected"/"inspection" meet.
 * - `removeStopWords`: Lance's built-in English list (it removes "no", "not", "should" but keeps
 *   "must", "shall", "may", "cannot"). Measured on 0.37.1: the filter runs after stemming, so a
 *   few stop words whose stem differs ("any" → "ani", "only" → "onli") stay in the index.
 *   BM25's IDF would down-weight them anyway; removal mostly shrinks postings.
 * - `asciiFolding`: "naïve" = "naive", "Größe" = "grosse", ligatures unfolded.
 * - `maxTokenLength: 40`: Lance's default; longer tokens (hashes, base64) are dropped.
 * - `withPosition: false`: no phrase queries are issued, so positions would only grow the index.
 */
export const FTS_TOKENIZER = {
  baseTokenizer: 'simple',
  language: 'English',
  lowercase: true,
  stem: true,
  removeStopWords: true,
  asciiFolding: true,
  maxTokenLength: 40,
  withPosition: false,
} as const satisfies Partial<lancedb.FtsOptions>;

/** `indexDetails` keys LanceDB reports for {@link FTS_TOKENIZER}'s options (checked at open). */
const FTS_DETAIL_KEYS: Record<keyof typeof FTS_TOKENIZER, string> = {
  baseTokenizer: 'base_tokenizer',
  language: 'language',
  lowercase: 'lower_case',
  stem: 'stem',
  removeStopWords: 'remove_stop_words',
  asciiFolding: 'ascii_folding',
  maxTokenLength: 'max_token_length',
  withPosition: 'with_position',
};

/**
 * Default time (ms) old table versions are kept after a newer version REPLACED them; `optimize()`
 * deletes the rest. Every write adds a version and every optimize rewrites fragments, so retained
 * versions multiply disk use (measured: 262 MB for 20k chunks with a 60 s retention during a
 * 150 s ingest, 6 MB without). A search or write reads the version that was the latest when it
 * started, for milliseconds to seconds; the retention is also stretched to cover the oldest call
 * still running (see {@link LanceDbChunkStore.optimize}). LanceDB's own default (7 days) suits
 * shared tables.
 */
export const DEFAULT_RETAIN_VERSIONS_MS = 10_000;

/**
 * Rows of the vectors table from which an approximate (IVF) vector index is built, at the next
 * optimize. Below it, dense search is exact (a flat scan). Measured on 2 loaded cores, 100k
 * vectors of 384 dimensions: exact search p95 830 ms; IVF_FLAT (cosine, 316 partitions, 20 probed)
 * p95 17 ms, recall@10 1.0 against exact search on clustered test vectors, built in 16 s. HNSW_SQ
 * took 359 s to build with a worse p95 (73 ms) and recall@10 0.974, so IVF_FLAT it is.
 */
export const VECTOR_INDEX_MIN_ROWS = 10_000;

/** Fewest IVF partitions an approximate search probes (LanceDB's own default `nprobes`). */
export const VECTOR_INDEX_MIN_NPROBES = 20;

/** Share of the IVF partitions an approximate search probes (see {@link vectorIndexNprobes}). */
export const VECTOR_INDEX_PROBE_SHARE = 0.2;

/**
 * Partitions an IVF search probes (LanceDB `nprobes`) for an index trained with `partitions`
 * partitions: {@link VECTOR_INDEX_PROBE_SHARE} of them, at least {@link VECTOR_INDEX_MIN_NPROBES}.
 * Measured on the bench:query chunk vectors (all-MiniLM-L6-v2, 100k rows, 316 partitions, 200
 * SciFact claims, recall@10 against exact search): 20 probes 0.847, 40 0.929, 60 0.948, 80 0.961,
 * with p50 latency 8–10 ms throughout (docs/retrieval.md).
 * @param partitions IVF partitions of the vector index (0 when there is none)
 * @returns an integer ≥ VECTOR_INDEX_MIN_NPROBES
 */
export function vectorIndexNprobes(partitions: number): number {
  return Math.max(VECTOR_INDEX_MIN_NPROBES, Math.ceil(VECTOR_INDEX_PROBE_SHARE * Math.max(0, partitions)));
}

/**
 * Most vectors a scope may hold for a dense search of it to go exact (see
 * {@link scopeSearchedExactly}). An exact prefiltered search reads only the scope's rows (the
 * `org_id` bitmap index gives their row ids) and has recall 1, but costs more per row than the IVF
 * search, which compares vectors held in the index cache: measured at 1M chunks of 100 orgs, one
 * org (10,000 vectors), load 10-13 on 2 cores: exact p50 19.9 / p95 46.9 ms; IVF with 200 of 1,000
 * partitions probed p50 29.4 / p95 296 ms, recall@10 0.968 (docs/retrieval.md "Latency at scale").
 * Exact cost grows with the scope's rows only, so this bound keeps it near 40 ms there.
 */
export const VECTOR_EXACT_MAX_ROWS = 20_000;

/**
 * Whether a dense search of a scope holding `scopeRows` of the table's `totalRows` vectors should
 * bypass the IVF index (an exact search over the scope's rows only). An IVF search compares the
 * query with every vector of the partitions it probes, whichever org they belong to (LanceDB's
 * prefilter only drops other orgs' rows from the result: `index_comparisons` in `analyzePlan`),
 * so with many orgs sharing the table it reads mostly other orgs' vectors. True when there is no
 * index, or when the scope holds at most {@link VECTOR_EXACT_MAX_ROWS} vectors and no more than
 * the IVF search would compare (`nprobes / partitions · totalRows`). With 100 orgs of equal size
 * every org search is exact up to 2M chunks; a single org holding the table uses the index.
 */
export function scopeSearchedExactly(scopeRows: number, totalRows: number, partitions: number, nprobes: number): boolean {
  if (partitions <= 0) return true;
  return scopeRows <= VECTOR_EXACT_MAX_ROWS && scopeRows <= (Math.min(nprobes, partitions) / partitions) * totalRows;
}

/**
 * The vector index is retrained (new partitions, √rows) once the table holds this many times the rows
 * it was trained on. Rows that `optimize()` adds later are assigned to the partitions trained on the
 * first rows, and those partitions fit the table worse as it grows: trained at 10k rows and grown
 * incrementally to 100k, recall@10 at 64 probes measured 0.81 on the bench:query vectors, against
 * about 0.95 for an index trained on all 100k (docs/retrieval.md). Doubling keeps the total
 * training work proportional to the rows written (each retrain costs about as much as all before it).
 */
export const VECTOR_INDEX_RETRAIN_GROWTH = 2;

/** Name of the vector index trained with `partitions` IVF partitions (the name records the count). */
export function vectorIndexName(partitions: number): string {
  return `${VECTOR_INDEX_NAME_PREFIX}${partitions}`;
}

const VECTOR_INDEX_NAME_PREFIX = 'vector_ivf_p';

/**
 * Scalar indexes on the scope columns, so the prefilter of a scoped search reads index pages
 * instead of evaluating the predicate on every row: BITMAP for the low-cardinality `org_id` and
 * `project_id`, BTREE for `document_id` (LanceDB's guidance: bitmap below ~10k distinct values).
 * Also a BTREE on the chunk `id`: a dense search reads its hits' chunks by id (`getChunks`), which
 * without it scans every row of the org (measured at 100k chunks, 50 ids, load ~16 on 2 cores:
 * p50 23 / p95 50 ms without, 7.6 / 22 ms with; built in 0.25 s). New rows are added by
 * `optimize()`; rows not yet covered are filtered by a scan.
 */
export async function ensureScalarIndexes(table: lancedb.Table, indexes: () => readonly (readonly [string, lancedb.Index])[] = chunkIndexes): Promise<void> {
  const existing = new Set((await table.listIndices()).flatMap((ix) => (ix.columns.length === 1 ? [ix.columns[0]] : [])));
  for (const [column, config] of indexes()) {
    if (!existing.has(column)) await table.createIndex(column, { config });
  }
}

/** Fresh index configs each time: a LanceDB `Index` is consumed by the `createIndex` it is given to. */
const chunkIndexes = () =>
  [
    ['org_id', lancedb.Index.bitmap()],
    ['project_id', lancedb.Index.bitmap()],
    ['document_id', lancedb.Index.btree()],
    ['id', lancedb.Index.btree()],
  ] as const;

/**
 * The vectors table's scope columns: a dense search prefilters on them before the nearest-neighbour
 * search, which without an index evaluates the predicate on every vector row.
 */
export const vectorScopeIndexes = () =>
  [
    ['org_id', lancedb.Index.bitmap()],
    ['project_id', lancedb.Index.bitmap()],
  ] as const;

/**
 * Builds the IVF_FLAT cosine index on `vector` once the table holds {@link VECTOR_INDEX_MIN_ROWS}
 * rows (partitions: √rows, LanceDB's guidance), and trains it again with √rows partitions once the
 * table has grown to {@link VECTOR_INDEX_RETRAIN_GROWTH} times the rows it was trained on (the new
 * index is built beside the old one, which is dropped after: searches keep an index meanwhile).
 * Between retrains, `optimize()` adds new rows to the trained partitions.
 * @returns the partitions of the vector index (0 while there is none)
 */
export async function ensureVectorIndex(table: lancedb.Table): Promise<number> {
  const index = (await table.listIndices()).find((ix) => ix.columns.includes('vector'));
  const trained = index ? trainedPartitions(index.name) : 0;
  const rows = await table.countRows();
  if (!index && rows < VECTOR_INDEX_MIN_ROWS) return 0;
  if (index && trained !== null && rows < VECTOR_INDEX_RETRAIN_GROWTH * trained * trained) return trained;
  const partitions = Math.round(Math.sqrt(rows));
  if (index?.name === vectorIndexName(partitions)) return partitions;
  await table.createIndex('vector', {
    config: lancedb.Index.ivfFlat({ distanceType: 'cosine', numPartitions: partitions }),
    name: vectorIndexName(partitions),
  });
  if (index) await table.dropIndex(index.name);
  return partitions;
}

/**
 * IVF partitions of the vector index of `table`: read from its name ({@link vectorIndexName}); for an
 * index built before the name recorded them, √(rows it covers), the count it was built with at best.
 * @returns 0 when the table has no vector index
 */
export async function vectorIndexPartitions(table: lancedb.Table): Promise<number> {
  const index = (await table.listIndices()).find((ix) => ix.columns.includes('vector'));
  if (!index) return 0;
  const partitions = trainedPartitions(index.name);
  if (partitions !== null) return partitions;
  return Math.round(Math.sqrt((await table.indexStats(index.name))?.numIndexedRows ?? 0));
}

/** Partition count recorded in a vector index name, or null for a name that does not record it. */
function trainedPartitions(name: string): number | null {
  if (!name.startsWith(VECTOR_INDEX_NAME_PREFIX)) return null;
  const n = Number(name.slice(VECTOR_INDEX_NAME_PREFIX.length));
  return Number.isInteger(n) && n > 0 ? n : null;
}

/**
 * Creates the FTS index on {@link FTS_COLUMN}, or rebuilds it when its tokenizer differs from
 * FTS_TOKENIZER; drops an FTS index of an older version on another column.
 */
export async function ensureFtsIndex(table: lancedb.Table): Promise<{ name: string; unindexedRows: number }> {
  const indices = await table.listIndices();
  for (const stale of indices.filter((ix) => ix.indexType === 'FTS' && !(ix.columns.length === 1 && ix.columns[0] === FTS_COLUMN))) {
    await table.dropIndex(stale.name);
  }
  const existing = indices.find((ix) => ix.indexType === 'FTS' && ix.columns.length === 1 && ix.columns[0] === FTS_COLUMN);
  if (existing && tokenizerMatches(existing.indexDetails)) {
    const stats = await table.indexStats(existing.name);
    return { name: existing.name, unindexedRows: stats?.numUnindexedRows ?? 0 };
  }
  await table.createIndex(FTS_COLUMN, { config: lancedb.Index.fts(FTS_TOKENIZER), replace: true });
  const created = (await table.listIndices()).find((ix) => ix.indexType === 'FTS' && ix.columns[0] === FTS_COLUMN);
  if (!created) throw new ChunkStoreError(ChunkStoreErrorCode.Internal, 'FTS index was not created');
  return { name: created.name, unindexedRows: 0 };
}

function tokenizerMatches(details: unknown): boolean {
  if (details === null || typeof details !== 'object') return false;
  const d = details as Record<string, unknown>;
  return (Object.keys(FTS_DETAIL_KEYS) as (keyof typeof FTS_TOKENIZER)[]).every((key) => d[FTS_DETAIL_KEYS[key]] === FTS_TOKENIZER[key]);
}

/**
 * The `cleanupOlderThan` of an optimize of `table`: Lance deletes the versions CREATED before
 * it (never the latest). Returned: the creation time of the oldest version that was still the
 * latest at `now − keep`, where `keep` = max(`retainVersionsMs`, age of the oldest running call
 * + 1 s). A version is thus deleted only once it was replaced more than `keep` ago, so no search
 * or write still running can be reading it, including the version this optimize's own
 * compaction replaces.
 * @param retainVersionsMs the store's `retainVersionsMs` option
 * @param callStarts start times (epoch ms) of the calls (searches, writes) still running
 */
export async function cleanupCutoff(table: lancedb.Table, retainVersionsMs: number, callStarts: Iterable<number>): Promise<Date> {
  const now = Date.now();
  const oldestCall = Math.min(now, ...callStarts);
  const since = now - Math.max(retainVersionsMs, now - oldestCall + 1000);
  const versions = (await table.listVersions()).map((v) => ({ version: v.version, at: new Date(v.timestamp).getTime() })).sort((a, b) => a.version - b.version);
  for (let i = 0; i + 1 < versions.length; i++) {
    if (versions[i + 1].at >= since) return new Date(Math.min(versions[i].at, since));
  }
  return new Date(Math.min(versions.at(-1)?.at ?? since, since));
}

/**
 * Table layout of the LanceDB chunk store: the chunks table's columns (Arrow schema and row shape),
 * the conversion between a {@link StoredChunk} and its row, the vectors table's schema, and the
 * in-place upgrades of tables written by older versions (columns added at open).
 */
import { pickCamelFields } from '@kb/common';
import * as lancedb from '@lancedb/lancedb';
import { FixedSizeList, Field, Float32, Int32, Schema, Utf8 } from 'apache-arrow';
import { ChunkStoreError, ChunkStoreErrorCode, StoredChunk, VectorSpace } from '../chunk-store';
import { packWordBoxes, type PackedWordBoxes, unpackWordBoxes } from '../store-input';

/** Name of the one LanceDB table holding every org's chunks. */
export const CHUNKS_TABLE = 'chunks';

/**
 * Column carrying the BM25 index: the chunk's heading path, then its text
 * (`heading_path || ' ' || text`; the JSON punctuation of `heading_path` is split away by the
 * tokenizer). Section titles say what a passage is about but are not part of chunk text (the
 * chunker keeps them in `headingPath`). Measured on SciFact train (title as the heading, 505
 * claims, `npm run eval:retrieval`): nDCG@10 0.849 with `text` alone, 0.861 with the title in the
 * same field; a separate title field fused by LanceDB's MultiMatchQuery gave 0.846 (boost 1) and
 * 0.764 (boost 2), so one field it is.
 */
export const FTS_COLUMN = 'search_text';

/**
 * Lance file format of the tables this store creates (LanceDB's `new_table_data_storage_version`).
 * LanceDB 0.39's default ("stable") writes format 2.2, whose random reads of a few rows cost 3-4
 * times those of 2.1 at the same size on disk: 10 rows by row id, every column, from a 1M-chunk
 * table (one fragment, page cache warm, 2-core AMD EPYC): 2.2 p50 14.8-18.6 ms, 2.1 4.1 ms; one
 * integer column 3.9-4.8 → 1.3 ms (2026-11-29, docs/retrieval.md). A search reads exactly such rows
 * (its hits' chunks). Only new tables take it: compaction keeps a table's format.
 */
export const DATA_STORAGE_VERSION = '2.1';

/** `createEmptyTable` options giving a new table {@link DATA_STORAGE_VERSION}. */
export const NEW_TABLE_STORAGE = { storageOptions: { new_table_data_storage_version: DATA_STORAGE_VERSION } } as const;

/** Table of dense chunk vectors (one vector space at a time, see `vector-space.json`). */
export const VECTORS_TABLE = 'chunk_vectors';
/** File recording the vector space (model name, dimensions) of {@link VECTORS_TABLE}. */
export const VECTOR_SPACE_FILE = 'vector-space.json';

/**
 * Arrow schema of {@link VECTORS_TABLE}: chunk id, org, project, document, and `vector`
 * FixedSizeList<Float32>[dimensions].
 */
export function vectorSchema(dimensions: number): Schema {
  return new Schema([
    new Field('id', new Utf8(), false),
    new Field('org_id', new Utf8(), false),
    new Field('project_id', new Utf8(), true),
    new Field('document_id', new Utf8(), false),
    new Field('vector', new FixedSizeList(dimensions, new Field('item', new Float32(), true)), false),
  ]);
}

/** The vectors table of the current vector space, with that space. */
export interface VectorTableHandle {
  space: VectorSpace;
  table: lancedb.Table;
}

/** Column layout of the table: one row per chunk. Lists are JSON strings (exact round trip). */
export interface ChunkRow {
  id: string;
  org_id: string;
  project_id: string | null;
  document_id: string;
  file_name: string;
  chunk_index: number;
  text: string;
  /** JSON array of strings. */
  heading_path: string;
  start_page: number | null;
  end_page: number | null;
  /** JSON array of `{ page, offset }`. */
  page_spans: string;
  /** JSON of the packed word boxes (see `packWordBoxes`); `[]` in rows written before boxes existed. */
  word_boxes: string;
  /** What BM25 indexes: heading path and text (see {@link FTS_COLUMN}); never read back. */
  search_text?: string;
}

/** Arrow schema of {@link CHUNKS_TABLE} (see {@link ChunkRow}). */
export const CHUNK_SCHEMA = new Schema([
  new Field('id', new Utf8(), false),
  new Field('org_id', new Utf8(), false),
  new Field('project_id', new Utf8(), true),
  new Field('document_id', new Utf8(), false),
  new Field('file_name', new Utf8(), false),
  new Field('chunk_index', new Int32(), false),
  new Field('text', new Utf8(), false),
  new Field('heading_path', new Utf8(), false),
  new Field('start_page', new Int32(), true),
  new Field('end_page', new Int32(), true),
  new Field('page_spans', new Utf8(), false),
  new Field('word_boxes', new Utf8(), false),
  new Field(FTS_COLUMN, new Utf8(), false),
]);

/** Columns read back into a {@link StoredChunk} (everything but the derived {@link FTS_COLUMN}). */
export const COLUMNS = CHUNK_SCHEMA.fields.map((f) => f.name).filter((name) => name !== FTS_COLUMN);

/** The row of `c`, with its {@link FTS_COLUMN} derived from heading path and text. */
export function toRow(c: StoredChunk): ChunkRow {
  const row: ChunkRow = {
    id: c.id,
    org_id: c.orgId,
    project_id: c.projectId,
    document_id: c.documentId,
    file_name: c.fileName,
    chunk_index: c.chunkIndex,
    text: c.text,
    heading_path: JSON.stringify(c.headingPath),
    start_page: c.startPage,
    end_page: c.endPage,
    page_spans: JSON.stringify(c.pageSpans.map((s) => ({ page: s.page, offset: s.offset }))),
    word_boxes: JSON.stringify(packWordBoxes(c.wordBoxes)),
  };
  return { ...row, search_text: `${row.heading_path} ${row.text}` };
}

/** The chunk a row read with {@link COLUMNS} stores. */
export function fromRow(r: ChunkRow): StoredChunk {
  return {
    ...pickCamelFields(r, ['id', 'org_id', 'project_id', 'document_id', 'file_name'], null),
    chunkIndex: Number(r.chunk_index),
    text: r.text,
    headingPath: JSON.parse(r.heading_path) as string[],
    startPage: r.start_page === null || r.start_page === undefined ? null : Number(r.start_page),
    endPage: r.end_page === null || r.end_page === undefined ? null : Number(r.end_page),
    pageSpans: JSON.parse(r.page_spans) as { page: number; offset: number }[],
    wordBoxes: unpackWordBoxes(r.word_boxes ? (JSON.parse(r.word_boxes) as PackedWordBoxes) : []),
  };
}

/**
 * Checks that an existing chunks table has every column of {@link COLUMNS}.
 * @throws ChunkStoreError `Internal` naming the missing columns (not a chunk store of this version).
 */
export async function checkSchema(table: lancedb.Table): Promise<void> {
  const names = new Set((await table.schema()).fields.map((f) => f.name));
  const missing = COLUMNS.filter((c) => !names.has(c));
  if (missing.length > 0) {
    throw new ChunkStoreError(ChunkStoreErrorCode.Internal, `table "${CHUNKS_TABLE}" lacks columns ${missing.join(', ')}: not a chunk store of this version`);
  }
}

/**
 * Tables written before word boxes existed get the column, empty (`[]`) in their rows: those
 * chunks' quotes have `boxes: []` until their documents are processed again.
 */
export async function addWordBoxesColumn(table: lancedb.Table): Promise<void> {
  const names = new Set((await table.schema()).fields.map((f) => f.name));
  if (names.has('word_boxes') || !names.has('page_spans')) return;
  await table.addColumns([{ name: 'word_boxes', valueSql: "'[]'" }]);
}

/**
 * Tables written before {@link FTS_COLUMN} existed get the column, computed by LanceDB from the
 * stored columns with the same expression as new rows (one rewrite at the first open).
 */
export async function addSearchTextColumn(table: lancedb.Table): Promise<void> {
  const names = new Set((await table.schema()).fields.map((f) => f.name));
  if (names.has(FTS_COLUMN)) return;
  await table.addColumns([{ name: FTS_COLUMN, valueSql: "concat(heading_path, ' ', text)" }]);
}

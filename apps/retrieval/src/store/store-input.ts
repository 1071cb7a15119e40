import type { WordBox } from '@kb/knowledge';
import { ChunkStoreError, ChunkStoreErrorCode, MAX_TOP_K, type StoredChunk } from './chunk-store';

/**
 * Input checks and error wrapping shared by every {@link ChunkStore} adapter, so that LanceDB and
 * Qdrant reject the same inputs with the same `Validation` messages (the contract suite asserts
 * them on both) and report engine failures the same way.
 */

/** A `Validation` ChunkStoreError with `message`. */
export function validation(message: string): ChunkStoreError {
  return new ChunkStoreError(ChunkStoreErrorCode.Validation, message);
}

/**
 * Runs one engine call; any error that is not already a ChunkStoreError becomes `Internal`
 * with `"<engine> <op> failed: <detail>"` and the original as `cause`.
 */
export async function wrapEngineCall<T>(engine: 'LanceDB' | 'Qdrant', op: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof ChunkStoreError) throw err;
    const detail = err instanceof Error ? err.message : String(err);
    throw new ChunkStoreError(ChunkStoreErrorCode.Internal, `${engine} ${op} failed: ${detail}`, { cause: err });
  }
}

/** @throws ChunkStoreError `Validation` unless `value` is a non-empty string. */
export function requireString(name: string, value: unknown): asserts value is string {
  if (typeof value !== 'string' || value.length === 0) throw validation(`${name} must be a non-empty string`);
}

/** Validates a list of non-empty strings; returns it without duplicates, order kept. */
export function requireStringArray(name: string, value: unknown): string[] {
  if (!Array.isArray(value)) throw validation(`${name} must be an array`);
  value.forEach((v, i) => requireString(`${name}[${i}]`, v));
  return [...new Set(value as string[])];
}

/** @throws ChunkStoreError `Validation` unless `topK` is an integer in [1, MAX_TOP_K]. */
export function requireTopK(topK: number): void {
  if (!Number.isInteger(topK) || topK < 1 || topK > MAX_TOP_K) throw validation(`topK must be an integer in [1, ${MAX_TOP_K}]`);
}

const INT32_MAX = 2 ** 31 - 1;

/** True for integers that fit a signed 32-bit column (page numbers, chunk indexes). */
export function isInt32(v: unknown): v is number {
  return Number.isInteger(v) && Math.abs(v as number) <= INT32_MAX;
}

/**
 * Structural checks of one chunk to store (`chunks[i]` in messages): ids non-empty, project id a
 * string or null, 32-bit page numbers and chunk index, heading path and page spans well formed.
 * @throws ChunkStoreError `Validation` naming the first bad field.
 */
export function validateStoredChunk(chunk: StoredChunk, i: number): void {
  const at = `chunks[${i}]`;
  if (chunk === null || typeof chunk !== 'object') throw validation(`${at} must be an object`);
  requireString(`${at}.id`, chunk.id);
  requireString(`${at}.orgId`, chunk.orgId);
  requireString(`${at}.documentId`, chunk.documentId);
  if (chunk.projectId !== null && typeof chunk.projectId !== 'string') throw validation(`${at}.projectId must be a string or null`);
  if (typeof chunk.fileName !== 'string') throw validation(`${at}.fileName must be a string`);
  if (typeof chunk.text !== 'string') throw validation(`${at}.text must be a string`);
  if (!isInt32(chunk.chunkIndex) || chunk.chunkIndex < 0) throw validation(`${at}.chunkIndex must be a non-negative 32-bit integer`);
  const pageOk = (p: unknown) => p === null || isInt32(p);
  if (!pageOk(chunk.startPage) || !pageOk(chunk.endPage)) throw validation(`${at}.startPage/endPage must be 32-bit integers or null`);
  if (!Array.isArray(chunk.headingPath) || !chunk.headingPath.every((h) => typeof h === 'string')) {
    throw validation(`${at}.headingPath must be an array of strings`);
  }
  if (!Array.isArray(chunk.pageSpans) || !chunk.pageSpans.every((s) => s !== null && typeof s === 'object' && isInt32(s.page) && isInt32(s.offset))) {
    throw validation(`${at}.pageSpans must be an array of { page, offset } integers`);
  }
  const wordOk = (w: WordBox) =>
    w !== null &&
    typeof w === 'object' &&
    isInt32(w.start) &&
    isInt32(w.end) &&
    isInt32(w.page) &&
    w.start >= 0 &&
    w.end >= w.start &&
    w.page >= 1 &&
    [w.x0, w.y0, w.x1, w.y1].every((v) => typeof v === 'number' && Number.isFinite(v));
  if (!Array.isArray(chunk.wordBoxes) || !chunk.wordBoxes.every(wordOk)) {
    throw validation(`${at}.wordBoxes must be an array of { start, end, page, x0, y0, x1, y1 } (integers, then finite numbers)`);
  }
}

/**
 * Word boxes as stored by the adapters: one `[start, end, page, x0, y0, x1, y1]` array per word
 * (about a third of the size of objects), in text order.
 */
export type PackedWordBoxes = number[][];

/** Packs a chunk's word boxes for storage (see {@link PackedWordBoxes}). */
export function packWordBoxes(words: readonly WordBox[]): PackedWordBoxes {
  return words.map((w) => [w.start, w.end, w.page, w.x0, w.y0, w.x1, w.y1]);
}

/** Unpacks stored word boxes; absent (a chunk stored before boxes existed) reads as none. */
export function unpackWordBoxes(packed: PackedWordBoxes | null | undefined): WordBox[] {
  return (packed ?? []).map(([start, end, page, x0, y0, x1, y1]) => ({ start, end, page, x0, y0, x1, y1 }));
}

/**
 * The input checks of `replaceDocumentChunks`, the same in every adapter: ids non-empty, `chunks` an
 * array, each chunk valid (`validateChunk`: {@link validateStoredChunk} plus the engine's own rules),
 * of this org and document, no id twice. Checks chunk by chunk, in order, so the first bad chunk
 * is the one named.
 * @returns `chunks`, checked.
 * @throws ChunkStoreError `Validation` naming the first bad field.
 */
export function validateDocumentChunks(
  orgId: string,
  documentId: string,
  chunks: StoredChunk[],
  validateChunk: (chunk: StoredChunk, i: number) => void,
): StoredChunk[] {
  requireString('orgId', orgId);
  requireString('documentId', documentId);
  if (!Array.isArray(chunks)) throw validation('chunks must be an array');
  const seen = new Set<string>();
  chunks.forEach((chunk, i) => {
    validateChunk(chunk, i);
    if (chunk.orgId !== orgId) throw validation(`chunks[${i}].orgId differs from orgId`);
    if (chunk.documentId !== documentId) throw validation(`chunks[${i}].documentId differs from documentId`);
    if (seen.has(chunk.id)) throw validation(`chunks[${i}].id is duplicated`);
    seen.add(chunk.id);
  });
  return chunks;
}

import { analyze } from '@kb/text';
import { MAX_QUERY_LENGTH, StoredChunk } from './chunk-store';

/**
 * Sparse lexical vectors for stores that score BM25 from client-side terms (Qdrant's sparse
 * vectors with the `idf` modifier). Terms come from {@link foldAccents} then `analyze` of
 * `@kb/text` (the same analysis for chunks and queries: tokenize, lowercase, stop words, Porter2
 * stemming), hashed to 32-bit
 * indices (FNV-1a; collisions among a vocabulary of ~10^5 terms in 2^32 slots are negligible).
 *
 * Chunk values are BM25's saturated term frequency tf·(k1+1) / (tf + k1·(1 − b + b·len/avgLen)),
 * Robertson & Zaragoza, "The Probabilistic Relevance Framework: BM25 and Beyond" (2009), with
 * k1 = 1.2, b = 0.75 (their usual defaults) and a fixed avgLen ({@link BM25_AVG_LEN}); the query
 * vector holds 1 per distinct term, and Qdrant multiplies by each term's IDF over the collection,
 * so a dot product gives BM25.
 */
export const BM25_K1 = 1.2;
export const BM25_B = 0.75;
/**
 * Average chunk length in terms used for length normalization: 120, measured on the ingestion
 * chunker's output for `../shared/corpus` and SciFact (1,200-character chunks after stop words).
 */
export const BM25_AVG_LEN = 120;

/**
 * Folds accents and ligatures the way the embedded store's analyzer does (tantivy ASCII folding):
 * NFKD, then combining marks removed, `ß` → `ss`; so "café naïve" and "cafe naive" meet.
 */
export function foldAccents(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .replace(/ß/g, 'ss');
}

/** Text analyzed for a chunk: heading path (section titles) then text, as the embedded store does. */
export function lexicalText(chunk: Pick<StoredChunk, 'headingPath' | 'text'>): string {
  return [...chunk.headingPath, chunk.text].join('\n');
}

/** FNV-1a 32-bit hash of a term (unsigned). */
export function termIndex(term: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < term.length; i++) {
    h ^= term.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** Sparse BM25 document vector of a chunk (indices sorted ascending, as Qdrant expects). */
export function chunkSparseVector(chunk: Pick<StoredChunk, 'headingPath' | 'text'>): { indices: number[]; values: number[] } {
  const terms = analyze(foldAccents(lexicalText(chunk)));
  const tf = new Map<number, number>();
  for (const t of terms) {
    const i = termIndex(t);
    tf.set(i, (tf.get(i) ?? 0) + 1);
  }
  const norm = BM25_K1 * (1 - BM25_B + (BM25_B * terms.length) / BM25_AVG_LEN);
  const entries = [...tf.entries()].sort((a, b) => a[0] - b[0]);
  return { indices: entries.map((e) => e[0]), values: entries.map(([, f]) => (f * (BM25_K1 + 1)) / (f + norm)) };
}

/** Sparse query vector (1 per distinct term), or `null` when the query has no searchable term. */
export function querySparseVector(query: string): { indices: number[]; values: number[] } | null {
  const indices = [...new Set(analyze(foldAccents(query.slice(0, MAX_QUERY_LENGTH))).map(termIndex))].sort((a, b) => a - b);
  return indices.length === 0 ? null : { indices, values: indices.map(() => 1) };
}

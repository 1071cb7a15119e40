/**
 * The SQL that the LanceDB chunk store hands to LanceDB (DataFusion SQL in `where`): string
 * quoting that keeps ids one literal, the scope and document predicates, the sanitizing of user
 * text into BM25 terms, and the limits on the size of the queries built.
 */
import { MAX_QUERY_LENGTH, SearchScope, StoredChunk } from '../chunk-store';
import { requireString, requireStringArray, validateStoredChunk, validation } from '../store-input';

/** Upper bound of chunks read for one document (a 2,000-page PDF gives ~10k chunks). */
export const MAX_CHUNKS_PER_DOCUMENT = 1_000_000;

/** Size of the `IN (...)` lists sent to LanceDB by `getChunks`. */
export const ID_BATCH = 500;

/**
 * Quotes `value` as an SQL string literal for LanceDB filters (DataFusion SQL): wraps it in single
 * quotes and doubles embedded single quotes. Backslashes have no escape meaning there (verified on
 * 0.37.1), so any well-formed string, including `'`, `\`, `--` and newlines, stays one literal.
 * @throws ChunkStoreError `Validation` for a string with NUL or unpaired surrogates (not
 *   representable exactly in UTF-8, so two different ids could collide).
 */
export function sqlString(value: string): string {
  if (value.includes('\u0000') || LONE_SURROGATE.test(value)) {
    throw validation('identifier contains NUL or an unpaired surrogate');
  }
  return `'${value.replace(/'/g, "''")}'`;
}

/**
 * The `where` predicate of a search scope: the org, then project scope (that project OR
 * org-level), then document ids.
 * @throws ChunkStoreError `Validation` for a missing org id or malformed lists.
 */
export function scopeFilter(scope: SearchScope): string {
  if (scope === null || typeof scope !== 'object') throw validation('scope must be an object');
  requireString('scope.orgId', scope.orgId);
  const parts = [`org_id = ${sqlString(scope.orgId)}`];
  if (scope.projectId !== undefined && scope.projectId !== null) {
    if (typeof scope.projectId !== 'string') throw validation('scope.projectId must be a string or null');
    parts.push(`(project_id = ${sqlString(scope.projectId)} OR project_id IS NULL)`);
  }
  if (scope.documentIds !== undefined) {
    const ids = requireStringArray('scope.documentIds', scope.documentIds);
    if (ids.length > 0) parts.push(`document_id IN (${ids.map(sqlString).join(', ')})`);
  }
  if (scope.excludeDocumentIds !== undefined) {
    const ids = requireStringArray('scope.excludeDocumentIds', scope.excludeDocumentIds);
    if (ids.length > 0) parts.push(`document_id NOT IN (${ids.map(sqlString).join(', ')})`);
  }
  return parts.join(' AND ');
}

/**
 * Turns user text into plain terms for a LanceDB `MatchQuery`: Unicode NFKC, every character that
 * is not a letter, digit or combining mark becomes a space, whitespace collapses, and the result
 * is cut to {@link MAX_QUERY_LENGTH}. The index tokenizer ('simple') splits on the same
 * characters, so no searchable term is lost, and no query syntax survives (quotes would otherwise
 * request a phrase query, which an index without positions rejects). Boolean words such as "AND"
 * are ordinary words (then stop words). Returns '' when nothing searchable remains.
 */
export function sanitizeQuery(query: string): string {
  return query
    .slice(0, MAX_QUERY_LENGTH)
    .normalize('NFKC')
    .replace(/[^\p{L}\p{N}\p{M}]+/gu, ' ')
    .trim();
}

/** SQL predicate matching the rows of these documents: one `org_id = … AND document_id IN (…)` per org. */
export function documentsFilter(docs: { orgId: string; documentId: string }[]): string {
  const byOrg = new Map<string, string[]>();
  for (const { orgId, documentId } of docs) byOrg.set(orgId, [...(byOrg.get(orgId) ?? []), documentId]);
  return [...byOrg].map(([orgId, ids]) => `(org_id = ${sqlString(orgId)} AND document_id IN (${[...new Set(ids)].map(sqlString).join(', ')}))`).join(' OR ');
}

/**
 * The shared structural checks, plus: ids must be safe inside the SQL filters LanceDB is given.
 * @throws ChunkStoreError `Validation` (see `validateStoredChunk` and {@link sqlString}).
 */
export function validateChunk(chunk: StoredChunk, i: number): void {
  validateStoredChunk(chunk, i);
  for (const v of [chunk.id, chunk.orgId, chunk.documentId, chunk.projectId ?? '']) sqlString(v);
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

import type { KbTransport } from './transport';
import type { DocumentChunk, PageSize } from './types';
import { PagedList, type Page, type PageOptions } from './paging';

/**
 * One page of a document's chunks, in document order (GET /api/v2/documents/{id}/chunks):
 * each `{ node_id, document_id, text, section, start_page, end_page }`; `pagination.total` is the
 * document's chunk count. `limit` 1–200 (default 50).
 * @throws KbApiError 404 for an unknown document, or one without chunks yet (not `ready` or `completed`).
 */
export async function listChunks(kb: KbTransport, documentId: string, options: PageOptions = {}): Promise<Page<DocumentChunk>> {
  return await kb.page(
    kb.api.GET('/api/v2/documents/{id}/chunks', {
      params: { path: { id: documentId }, query: { limit: options.limit, offset: options.offset } },
      signal: options.signal,
    }),
  );
}

/**
 * Every chunk of a document, in document order, fetched a page at a time (`pageSize`, default
 * 200, the largest page) as the iteration goes: `kb.documents.chunks(id, { limit })` with another
 * default page size.
 * @throws KbApiError as {@link listChunks}.
 */
export async function* iterateChunks(
  kb: KbTransport,
  documentId: string,
  options: { pageSize?: number; signal?: AbortSignal } = {},
): AsyncGenerator<DocumentChunk> {
  yield* new PagedList<DocumentChunk>((offset, limit, signal) => listChunks(kb, documentId, { offset, limit, signal }), {
    limit: options.pageSize ?? 200,
    signal: options.signal,
  });
}

/**
 * The chunk a source's `node_id` (or a citation's `chunk_id`) points at
 * (GET /api/v2/documents/{id}/chunks/{node_id}).
 * @throws KbApiError 404 for an unknown document or chunk.
 */
export async function getChunk(kb: KbTransport, documentId: string, nodeId: string, options: { signal?: AbortSignal } = {}): Promise<DocumentChunk> {
  return await kb.data(
    kb.api.GET('/api/v2/documents/{id}/chunks/{node_id}', { params: { path: { id: documentId, node_id: nodeId } }, signal: options.signal }),
  );
}

/**
 * The size of page `page` (1-based) of a document in PDF points, `{ page, width, height }`
 * (GET /api/v2/documents/{id}/pages/{n}): the space of the `boxes` of sources and citations
 * (origin at the page's top-left).
 * @throws KbApiError 400 for a page number that is not an integer from 1; 404 for an unknown
 *   document or another organization's, one not processed yet, a format without pages (not a PDF),
 *   or a page past the last one.
 */
export async function getPage(kb: KbTransport, documentId: string, page: number, options: { signal?: AbortSignal } = {}): Promise<PageSize> {
  return await kb.data(kb.api.GET('/api/v2/documents/{id}/pages/{n}', { params: { path: { id: documentId, n: page } }, signal: options.signal }));
}

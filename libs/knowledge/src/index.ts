import { AppError, AsyncClient, CallContext } from '@kb/common';
import { documentsV1, retrievalV1 } from '@kb/proto';
import type { PassageInput } from '@kb/text';
import { chunkFromProto, passageOf } from './chunks';

export * from './chunks';
export * from './citations';
export * from './locations';

export type DocumentsClient = AsyncClient<typeof documentsV1.DocumentsServiceService>;
export type RetrievalClient = AsyncClient<typeof retrievalV1.RetrievalServiceService>;

/** One retrieved chunk, in the shape the answerer and the judge consume. */
export type Passage = PassageInput;

/** Where to search: an org's project knowledge scope / whole org, or the shared safety corpus. */
export interface KnowledgeScope {
  corpus: 'org' | 'safety';
  /** Project knowledge scope: the project's documents plus the org-level documents. */
  projectId?: string;
  /** Restrict to these documents (handbooks). */
  documentIds?: string[];
}

/**
 * Searches the knowledge scope of the caller's org (`ctx.orgId`) and returns the
 * passages best first.
 *
 * Document versions (docs/retrieval.md "Document versions: one switch point"): the scope is first
 * read from the documents service in one database snapshot (ResolveSearchScope): handbook ids are
 * read as the current version of their chains, and superseded or not yet ready documents are
 * excluded in the retrieval filter, before ranking. A version switch commits in one transaction,
 * so every search sees exactly one version of a chain, never both, never neither. An explicit
 * `documentIds` of which no current version is searchable returns no passages (never the whole
 * scope).
 *
 * Chunks of documents that are no longer ready/completed afterwards (deleted while the search
 * ran) are dropped, so a deleted document is never cited.
 *
 * @param topK number of passages wanted (1–50).
 * @throws AppError from the retrieval or documents services (e.g. SERVICE_UNAVAILABLE).
 */
export async function searchKnowledge(
  ctx: CallContext,
  clients: { retrieval: RetrievalClient; documents: DocumentsClient },
  query: string,
  scope: KnowledgeScope,
  topK: number,
): Promise<Passage[]> {
  const safety = scope.corpus === 'safety';
  const asked = scope.documentIds ?? [];
  const read = safety
    ? { documentIds: asked, excludeDocumentIds: [] }
    : await clients.documents.resolveSearchScope({ projectId: scope.projectId, documentIds: asked }, ctx);
  if (asked.length > 0 && read.documentIds.length === 0) return [];
  const res = await clients.retrieval.search(
    {
      query,
      projectId: scope.projectId,
      documentIds: read.documentIds,
      excludeDocumentIds: read.excludeDocumentIds,
      topK,
      corpus: safety ? retrievalV1.Corpus.CORPUS_SAFETY : retrievalV1.Corpus.CORPUS_ORG,
    },
    ctx,
  );
  const passages = res.hits.map((h) => toPassage(h));
  if (safety || passages.length === 0) return passages;
  const live = new Set((await clients.documents.filterLiveDocuments({ documentIds: [...new Set(passages.map((p) => p.documentId))] }, ctx)).documentIds);
  return passages.filter((p) => live.has(p.documentId));
}

/**
 * Composes a result from passages, then checks right before it is returned that every document it
 * cites still exists; if one was deleted meanwhile, composes again without that document's
 * passages (decisions.md: a deleted document is never cited once its delete has returned).
 *
 * @param compose builds the result from passages (synchronously or not).
 * @param citedDocumentIds the document ids a result cites.
 */
export async function composeWithLiveSources<R>(
  ctx: CallContext,
  documents: DocumentsClient,
  passages: Passage[],
  compose: (passages: Passage[]) => R | Promise<R>,
  citedDocumentIds: (result: R) => string[],
): Promise<R> {
  let current = passages;
  for (;;) {
    const result = await compose(current);
    const cited = [...new Set(citedDocumentIds(result))];
    if (cited.length === 0) return result;
    const live = new Set((await documents.filterLiveDocuments({ documentIds: cited }, ctx)).documentIds);
    if (cited.every((id) => live.has(id))) return result;
    current = current.filter((p) => live.has(p.documentId) || !cited.includes(p.documentId));
  }
}

/** Converts a retrieval hit to a Passage. */
export function toPassage(hit: retrievalV1.SearchHit): Passage {
  return passageOf(chunkFromProto(hit.chunk!), hit.score);
}

/**
 * Checks that the project exists in the caller's org (`ctx.orgId`).
 * @throws AppError NOT_FOUND otherwise.
 */
export async function requireProject(ctx: CallContext, documents: DocumentsClient, projectId: string): Promise<void> {
  await documents.getProject({ id: projectId }, ctx);
}

/**
 * The first version of each document's chain of revisions (decisions.md "Document versions"),
 * following `replaces` back from each id: `Map<id, rootId>` with an entry for every id given.
 * A document that is unknown to the org (deleted, another org's) is its own root. Reads the
 * documents in batches of up to 200 per step back, at most `maxSteps` steps (a chain longer than
 * that ends at the oldest version read).
 *
 * @throws the documents service's errors (UNAVAILABLE…), unchanged.
 */
export async function versionChainRoots(ctx: CallContext, documents: DocumentsClient, ids: readonly string[], maxSteps = 20): Promise<Map<string, string>> {
  const replaces = new Map<string, string | null>();
  let wanted = [...new Set(ids)];
  for (let step = 0; step <= maxSteps && wanted.length > 0; step++) {
    for (let i = 0; i < wanted.length; i += 200) {
      const batch = wanted.slice(i, i + 200);
      const res = await documents.listDocuments({ documentIds: batch, page: { limit: 200, offset: 0 } }, ctx);
      for (const d of res.documents) replaces.set(d.id, d.replaces ?? null);
      for (const id of batch) if (!replaces.has(id)) replaces.set(id, null);
    }
    wanted = [...new Set([...replaces.values()].filter((r): r is string => r !== null && !replaces.has(r)))];
  }
  const roots = new Map<string, string>();
  for (const id of new Set(ids)) {
    let at = id;
    for (let hops = 0; hops <= maxSteps; hops++) {
      const prev = replaces.get(at);
      if (!prev || !replaces.has(prev)) break;
      at = prev;
    }
    roots.set(id, at);
  }
  return roots;
}

/**
 * Resolves handbook ids to document ids (each must be a ready/completed document of the org).
 * @throws AppError NOT_FOUND naming the first bad id.
 */
export async function resolveHandbooks(ctx: CallContext, documents: DocumentsClient, ids: string[]): Promise<documentsV1.Document[]> {
  if (ids.length === 0) return [];
  const res = await documents.resolveHandbooks({ documentIds: ids }, ctx);
  if (res.documents.length === 0) throw AppError.notFound('Handbooks not found.');
  return res.documents;
}

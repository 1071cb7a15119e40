import { AppError, CallContext, ErrorCode, isUuid, UnaryHandlers } from '@kb/common';
import { providerAppError, type ProviderErrorMessages } from '@kb/models';
import { chunkFromProto, chunkToProto } from '@kb/knowledge';
import { retrievalV1 } from '@kb/proto';
import { ChunkStoreError, SAFETY_CORPUS_ORG, StoredChunk } from '../store/chunk-store';
import { RetrievalService } from '../search/retrieval.service';

type Handlers = UnaryHandlers<typeof retrievalV1.RetrievalServiceService>;

/** Largest top_k a caller may ask for. */
export const MAX_TOP_K = 100;

function ownerOf(ctx: CallContext, corpus: retrievalV1.Corpus): string {
  return corpus === retrievalV1.Corpus.CORPUS_SAFETY ? SAFETY_CORPUS_ORG : ctx.orgId;
}

/** A chunk to index, owned by `orgId`; the request's project and document apply to every chunk. */
function toStored(orgId: string, projectId: string | null, documentId: string, c: retrievalV1.Chunk): StoredChunk {
  return { ...chunkFromProto(c), orgId, projectId, documentId };
}

/** Maps store errors to API errors: bad input → VALIDATION_ERROR, closed store → SERVICE_UNAVAILABLE. */
async function mapStoreErrors<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof ChunkStoreError && error.code === 'Validation') throw AppError.validation(error.message);
    if (error instanceof ChunkStoreError && error.code === 'Unavailable') {
      throw new AppError(ErrorCode.SERVICE_UNAVAILABLE, 'The search index is not available. Retry shortly.');
    }
    throw error;
  }
}

/** What callers are told when the embedding model fails: always SERVICE_UNAVAILABLE (a timeout too), so ingestion retries later. */
const EMBEDDING_MODEL_FAILURE: ProviderErrorMessages = { unavailable: (error) => `The embedding model is not available: ${error.message}` };

/** Maps an embeddings provider failure to SERVICE_UNAVAILABLE, so callers (ingestion) retry later. */
async function mapProviderErrors<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw providerAppError(error, EMBEDDING_MODEL_FAILURE);
  }
}

/**
 * gRPC controller of RetrievalService over a ChunkStore. The org comes from call metadata; the
 * safety corpus is stored under SAFETY_CORPUS_ORG and searched regardless of the caller's org.
 */
export function retrievalGrpcHandlers(service: RetrievalService): Handlers {
  return {
    indexDocument: async (req, ctx) => {
      if (!isUuid(req.documentId)) throw AppError.validation('document_id must be a UUID.');
      const owner = ownerOf(ctx, req.corpus);
      const chunks = req.chunks.map((c) => toStored(owner, req.projectId ?? null, req.documentId, c));
      await mapStoreErrors(() => service.indexDocument(owner, req.documentId, chunks));
      return { chunkCount: chunks.length };
    },
    deleteDocuments: async (req, ctx) => {
      const ids = req.documentIds.filter(isUuid);
      return { chunksDeleted: ids.length === 0 ? 0 : await mapStoreErrors(() => service.deleteDocuments(ownerOf(ctx, req.corpus), ids)) };
    },
    search: async (req, ctx) => {
      const topK = Math.min(Math.max(req.topK || 8, 1), MAX_TOP_K);
      if (req.projectId && !isUuid(req.projectId)) throw AppError.validation('project_id must be a UUID.');
      const safety = req.corpus === retrievalV1.Corpus.CORPUS_SAFETY;
      const result = await mapStoreErrors(() =>
        service.search(
          req.query,
          {
            orgId: ownerOf(ctx, req.corpus),
            projectId: safety ? undefined : req.projectId,
            documentIds: req.documentIds.filter(isUuid),
            excludeDocumentIds: safety ? undefined : req.excludeDocumentIds.filter(isUuid),
          },
          topK,
        ),
      );
      return {
        hits: result.hits.map((h) => ({ chunk: chunkToProto(h.chunk), score: h.score, rank: h.rank })),
        mode: result.mode,
        degradedReason: result.degradedReason ?? '',
      };
    },
    embedDocument: async (req, ctx) => {
      if (!isUuid(req.documentId)) throw AppError.validation('document_id must be a UUID.');
      const result = await mapStoreErrors(() => mapProviderErrors(() => service.embedDocument(ownerOf(ctx, req.corpus), req.documentId)));
      return { chunksEmbedded: result.embedded, skippedReason: result.skipped ?? '' };
    },
    listChunks: async (req, ctx) => {
      if (!isUuid(req.documentId)) throw AppError.validation('document_id must be a UUID.');
      const result = await mapStoreErrors(() => service.listDocumentChunks(ctx.orgId, req.documentId, req.limit || 50, req.offset));
      return { chunks: result.chunks.map(chunkToProto), total: result.total };
    },
    getChunk: async (req, ctx) => {
      if (!isUuid(req.documentId)) throw AppError.validation('document_id must be a UUID.');
      if (!isUuid(req.chunkId)) throw AppError.validation('chunk_id must be a UUID.');
      const chunk = await mapStoreErrors(() => service.getDocumentChunk(ctx.orgId, req.documentId, req.chunkId));
      if (!chunk) throw AppError.notFound(`Chunk ${req.chunkId} of document ${req.documentId} not found.`);
      return chunkToProto(chunk);
    },
    reindex: async () => {
      const dense = service.denseState();
      if (!service.hasEmbeddings()) {
        const why = dense.state === 'off' ? ` (${dense.reason})` : '';
        throw AppError.validation(`No embedding model is loaded${why}: there is nothing to re-index.`);
      }
      const result = await mapStoreErrors(() => mapProviderErrors(() => service.reindex()));
      const now = service.denseState();
      const space = now.state === 'ready' ? now.space : { model: '', dimensions: 0 };
      return { documents: result.documents, chunks: result.chunks, model: space.model, dimensions: space.dimensions };
    },
  };
}

import { AppError, CallContext, isUuid, sectionOf, UnaryHandlers, MAX_IDS_PER_REQUEST, pageWindow } from '@kb/common';
import { documentStatus } from '@kb/events';
import { documentsV1 } from '@kb/proto';
import { DocumentsService, IndexedChunk } from '../documents/documents.service';
import { toProtoDocument } from './documents.mappers';
import { ProjectWithCount } from '../projects/projects.repository';
import { ProjectsService } from '../projects/projects.service';

type Handlers = UnaryHandlers<typeof documentsV1.DocumentsServiceService>;

function requireUuid(value: string, field: string): string {
  if (!isUuid(value)) throw AppError.validation(`${field} must be a UUID.`);
  return value;
}

function requireIds(ids: string[], field: string): string[] {
  if (ids.length < 1 || ids.length > MAX_IDS_PER_REQUEST) throw AppError.validation(`${field} must have 1 to ${MAX_IDS_PER_REQUEST} items.`);
  ids.forEach((id) => requireUuid(id, field));
  return ids;
}

export function toProtoProject({ project, documentCount }: ProjectWithCount): documentsV1.Project {
  return {
    id: project.id,
    orgId: project.orgId,
    name: project.name,
    description: project.description ?? undefined,
    documentCount,
    createdAt: project.createdAt.toISOString(),
    updatedAt: project.updatedAt.toISOString(),
  };
}

export { toProtoDocument };

/** A chunk as the API shows it (decisions.md "Chunks"): `section` is the heading path joined by " > ". */
export function toProtoChunk(c: IndexedChunk): documentsV1.DocumentChunk {
  return {
    nodeId: c.id,
    documentId: c.documentId,
    text: c.text,
    section: sectionOf(c.headingPath) ?? undefined,
    startPage: c.startPage ?? undefined,
    endPage: c.endPage ?? undefined,
    orderIndex: c.chunkIndex,
  };
}

/**
 * gRPC controller of DocumentsService: validates what the gateway may not have (services never
 * trust their caller), maps proto messages to use-case inputs and back.
 */
export function documentsGrpcHandlers(projects: ProjectsService, documents: DocumentsService): Handlers {
  return {
    createProject: async (req, ctx: CallContext) => toProtoProject(await projects.create(ctx, { name: req.name, description: req.description ?? null })),
    getProject: async (req, ctx) => toProtoProject(await projects.get(ctx, requireUuid(req.id, 'id'))),
    listProjects: async (req, ctx) => {
      const { limit, offset } = pageWindow(req.page);
      const { items, total } = await projects.list(ctx, limit, offset);
      return { projects: items.map(toProtoProject), total };
    },
    updateProject: async (req, ctx) =>
      toProtoProject(
        await projects.update(ctx, requireUuid(req.id, 'id'), {
          name: req.name,
          description: req.hasDescription ? (req.description ?? null) : undefined,
        }),
      ),
    deleteProject: async (req, ctx) => {
      await projects.delete(ctx, requireUuid(req.id, 'id'));
      return {};
    },
    reserveUpload: async (req, ctx) => {
      const { document, upload } = await documents.reserveUpload(ctx, {
        fileName: req.fileName,
        contentType: req.contentType,
        sizeBytes: req.sizeBytes,
        projectId: req.projectId ? requireUuid(req.projectId, 'project_id') : null,
        replaces: req.replaces ? requireUuid(req.replaces, 'replaces') : null,
      });
      return {
        document: toProtoDocument(document),
        upload: { url: upload.url, method: upload.method, recommendedContentType: upload.recommendedContentType, expiresAt: upload.expiresAt.toISOString() },
      };
    },
    processDocuments: async (req, ctx) => {
      const result = await documents.process(ctx, requireIds(req.documentIds, 'document_ids'));
      return { processed: result.processed, skipped: result.skipped, failed: result.failed };
    },
    listDocuments: async (req, ctx) => {
      const { limit, offset } = pageWindow(req.page);
      const { items, total } = await documents.list(
        ctx,
        {
          projectId: req.projectId ? requireUuid(req.projectId, 'project_id') : undefined,
          documentIds: req.documentIds.map((id) => requireUuid(id, 'document_ids')),
          status: req.status === undefined ? undefined : documentStatus.fromProto(req.status),
          current: req.current,
        },
        limit,
        offset,
      );
      return { documents: items.map(toProtoDocument), total };
    },
    getDocument: async (req, ctx) => toProtoDocument(await documents.get(ctx, requireUuid(req.id, 'id'))),
    getDownload: async (req, ctx) => {
      const d = await documents.download(ctx, requireUuid(req.id, 'id'));
      return {
        documentId: d.document.id,
        fileName: d.document.fileName,
        contentType: d.document.contentType,
        sizeBytes: d.sizeBytes,
        downloadUrl: d.url,
        expiresAt: d.expiresAt.toISOString(),
      };
    },
    deleteDocuments: async (req, ctx) => ({ deleted: await documents.delete(ctx, requireIds(req.documentIds, 'document_ids')) }),
    resolveHandbooks: async (req, ctx) => ({
      documents: (
        await documents.resolveHandbooks(
          ctx,
          req.documentIds.map((id) => requireUuid(id, 'handbook_ids')),
        )
      ).map(toProtoDocument),
    }),
    filterLiveDocuments: async (req, ctx) => ({ documentIds: await documents.filterLive(ctx, req.documentIds.filter(isUuid)) }),
    resolveSearchScope: async (req, ctx) =>
      documents.resolveSearchScope(ctx, req.projectId ? requireUuid(req.projectId, 'project_id') : null, req.documentIds.filter(isUuid)),
    listChunks: async (req, ctx) => {
      const { limit, offset } = pageWindow(req.page);
      const result = await documents.listChunks(ctx, requireUuid(req.documentId, 'id'), limit, offset);
      return { chunks: result.chunks.map(toProtoChunk), total: result.total };
    },
    getChunk: async (req, ctx) => toProtoChunk(await documents.getChunk(ctx, requireUuid(req.documentId, 'id'), requireUuid(req.nodeId, 'node_id'))),
    getPage: async (req, ctx) => {
      if (!Number.isInteger(req.page) || req.page < 1) throw AppError.validation('n must be a page number (an integer from 1).');
      return documents.getPage(ctx, requireUuid(req.documentId, 'id'), req.page);
    },
  };
}

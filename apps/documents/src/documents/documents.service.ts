import {
  ACCEPTED_CONTENT_TYPES,
  AppError,
  CallContext,
  charLengthWithin,
  isAcceptedContentType,
  normalizeContentType,
  unique,
  FILE_NAME_MAX_CHARS,
  MAX_UPLOAD_BYTES,
} from '@kb/common';
import { ProcessRequestedEvent, type SkipReason } from '@kb/events';
import { isStorageError, type ObjectInfo, type ObjectStorage } from '@kb/storage';
import { randomBytes, randomUUID } from 'node:crypto';
import { from, lastValueFrom, mergeMap, toArray } from 'rxjs';
import { ProjectsService } from '../projects/projects.service';
import { DocumentEntity, DocumentStatus } from './document.entity';
import { DocumentFilter, DocumentsRepository } from './documents.repository';
import type { IndexedChunk } from '@kb/knowledge';

/** service-api.md §8 limits. */
export const UPLOAD_URL_TTL_SECONDS = 2 * 3600;
export const DOWNLOAD_URL_TTL_SECONDS = 10 * 60;

/** Why a document was skipped (SKIP_REASONS of `@kb/events`, which the API reference lists). */
export type { SkipReason };

export interface ProcessResult {
  processed: string[];
  skipped: { documentId: string; reason: SkipReason }[];
  failed: { documentId: string; error: string; message: string }[];
}

/** What starting one document of a process call came to. */
type ProcessOutcome =
  | { kind: 'processed'; documentId: string }
  | { kind: 'skipped'; documentId: string; reason: SkipReason }
  | { kind: 'failed'; documentId: string; error: string; message: string };

/**
 * Documents of one process call started at once. A call takes up to 100 ids (service-api.md, limits);
 * one at a time, 100 of them took more than the gateway's 30 s gRPC deadline while ingestion was
 * busy (`npm run bench:index -- --parts api`). 8 stays below the service's PostgreSQL pool (10).
 */
export const PROCESS_CONCURRENCY = 8;

/** Ports the documents use cases need besides their tables. */
export interface DocumentsDependencies {
  repository: DocumentsRepository;
  projects: ProjectsService;
  storage: ObjectStorage;
  /** Publishes documents.process.requested (idempotent per document). */
  publishProcessRequested: (event: ProcessRequestedEvent) => Promise<void>;
  /** Removes every indexed chunk of the documents; resolves once they can no longer be found. */
  deleteIndexedChunks: (orgId: string, documentIds: string[]) => Promise<void>;
  /** Publishes documents.deleted (best effort, after the fact). */
  publishDeleted: (orgId: string, documentIds: string[]) => Promise<void>;
  /** The indexed chunks of a document (the retrieval service). */
  chunks: ChunkReader;
}

/** A chunk as indexed (the one chunk record, @kb/knowledge). */
export type { IndexedChunk };

/** Reads a document's indexed chunks (port over the retrieval service's ListChunks / GetChunk). */
export interface ChunkReader {
  /** One page in document order and the document's chunk count. */
  list(orgId: string, documentId: string, limit: number, offset: number): Promise<{ chunks: IndexedChunk[]; total: number }>;
  /** The chunk, or null when the document has no chunk with this id. */
  get(orgId: string, documentId: string, chunkId: string): Promise<IndexedChunk | null>;
}

// eslint-disable-next-line no-control-regex
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * Why a file name cannot be accepted at reservation, or null when it can. A name must be 1 to
 * 500 characters (service-api.md §8), not blank (only whitespace), free of path separators
 * (`/`, `\`), and free of control characters (C0 U+0000–U+001F incl. NUL, TAB, CR, LF; DEL
 * U+007F; C1 U+0080–U+009F): the name is sent back in the download's `Content-Disposition`
 * header, which cannot carry them, so such a document could never be downloaded.
 */
export function fileNameProblem(name: string): string | null {
  if (!charLengthWithin(name, 1, FILE_NAME_MAX_CHARS)) return `file_name must be 1 to ${FILE_NAME_MAX_CHARS} characters.`;
  if (name.trim() === '') return 'file_name must not be blank (only spaces).';
  if (CONTROL_CHARACTERS.test(name)) return 'file_name must not contain control characters (such as NUL, tab, CR or LF).';
  if (/[/\\]/.test(name)) return 'file_name must not contain path separators (/ or \\).';
  return null;
}

/**
 * The file name served in a download's `Content-Disposition`: control characters become `_`
 * and a blank name becomes `download`. Names accepted since {@link fileNameProblem} are
 * unchanged; this keeps documents reserved before that rule downloadable.
 */
export function downloadFileName(name: string): string {
  // eslint-disable-next-line no-control-regex
  const cleaned = name.replace(/[\u0000-\u001f\u007f-\u009f]/g, '_');
  return cleaned.trim() === '' ? 'download' : cleaned;
}

/** Storage key of a document's processed original file. Document ids are globally unique UUIDs. */
export function storageKeyFor(documentId: string): string {
  return `documents/${documentId}/original`;
}

/**
 * A new upload key for one reservation: `uploads/<document id>/<128 random bits, hex>`. The key
 * appears only in the presigned URL; it is never the key of the processed original, so a PUT to
 * the URL after processing can never replace what was processed (issue 15, defect 1).
 */
export function uploadKeyFor(documentId: string): string {
  return `uploads/${documentId}/${randomBytes(16).toString('hex')}`;
}

/**
 * How long after reservation an upload key may still be written by a late PUT: the URL lifetime
 * plus 5 minutes for clock skew between the storage and this service. After that the closed-upload
 * sweep deletes whatever is there.
 */
export const UPLOAD_KEY_RETENTION_MS = (UPLOAD_URL_TTL_SECONDS + 5 * 60) * 1000;

/** Use cases for documents (service-api.md "Documents", decisions.md "Documents"). */
export class DocumentsService {
  constructor(private readonly deps: DocumentsDependencies) {}

  /**
   * Reserves an upload slot: creates the document (awaiting_upload) and a presigned PUT URL
   * valid for about 2 hours. With `replaces`, the document is the next version of that one
   * (decisions.md "Document versions"): `version` is its version + 1; it supersedes it when it
   * becomes ready.
   * @throws VALIDATION_ERROR for a bad name, size or unsupported type; NOT_FOUND for an unknown
   *   project, or a `replaces` that is not a document of the org with the same `project_id`;
   *   CONFLICT when `replaces` is already superseded or being replaced by a version still processing.
   */
  async reserveUpload(
    ctx: CallContext,
    input: { fileName: string; contentType: string; sizeBytes: number; projectId: string | null; replaces?: string | null },
  ): Promise<{ document: DocumentEntity; upload: { url: string; method: string; recommendedContentType: string; expiresAt: Date } }> {
    const nameProblem = fileNameProblem(input.fileName);
    if (nameProblem !== null) throw AppError.validation(nameProblem);
    if (!Number.isInteger(input.sizeBytes) || input.sizeBytes < 0 || input.sizeBytes > MAX_UPLOAD_BYTES) {
      throw AppError.validation(`size_bytes must be an integer from 0 to ${MAX_UPLOAD_BYTES} (500 MB).`);
    }
    if (!isAcceptedContentType(input.contentType)) {
      throw AppError.validation(`content_type '${input.contentType}' is not supported. Supported types: ${ACCEPTED_CONTENT_TYPES.join(', ')}.`);
    }
    if (input.projectId) await this.deps.projects.requireExists(ctx, input.projectId);
    const contentType = normalizeContentType(input.contentType);
    const now = new Date();
    const id = randomUUID();
    const document: DocumentEntity = {
      id,
      orgId: ctx.orgId,
      projectId: input.projectId,
      fileName: input.fileName,
      contentType,
      declaredSizeBytes: input.sizeBytes,
      sizeBytes: null,
      status: 'awaiting_upload',
      chunkCount: null,
      pageCount: null,
      pageSizes: null,
      errorMessage: null,
      progress: null,
      progressAt: null,
      storageKey: storageKeyFor(id),
      uploadKey: uploadKeyFor(id),
      version: 1,
      replaces: input.replaces ?? null,
      supersededBy: null,
      processingStartedAt: null,
      createdAt: now,
      updatedAt: now,
    };
    const presigned = await this.deps.storage.presignPut(document.uploadKey!, {
      contentType,
      expiresInSeconds: UPLOAD_URL_TTL_SECONDS,
      contentLength: input.sizeBytes,
    });
    // insertVersion sets `version` on the document it inserts.
    if (document.replaces !== null) await this.deps.repository.insertVersion(document as DocumentEntity & { replaces: string }, ctx);
    else await this.deps.repository.insert(document, ctx);
    return { document, upload: { url: presigned.url, method: presigned.method, recommendedContentType: contentType, expiresAt: presigned.expiresAt } };
  }

  /**
   * Starts processing of uploaded documents. Per-document problems are reported, not thrown.
   * Duplicate ids are processed once. Up to {@link PROCESS_CONCURRENCY} documents are started at
   * once (each is a storage stat, a conditional status update, the upload slot's move and a NATS
   * publish); the lists of the result keep the order of `documentIds`.
   */
  async process(ctx: CallContext, documentIds: string[]): Promise<ProcessResult> {
    const ids = unique(documentIds);
    const docs = new Map((await this.deps.repository.findMany(ctx.orgId, ids)).map((d) => [d.id, d]));
    const outcomes = await lastValueFrom(
      from(ids).pipe(
        mergeMap(async (id, index) => ({ index, outcome: await this.startProcessing(ctx, id, docs.get(id)) }), PROCESS_CONCURRENCY),
        toArray(),
      ),
    );
    const result: ProcessResult = { processed: [], skipped: [], failed: [] };
    for (const { outcome } of outcomes.sort((a, b) => a.index - b.index)) {
      if (outcome.kind === 'processed') result.processed.push(outcome.documentId);
      else if (outcome.kind === 'skipped') result.skipped.push({ documentId: outcome.documentId, reason: outcome.reason });
      else result.failed.push({ documentId: outcome.documentId, error: outcome.error, message: outcome.message });
    }
    return result;
  }

  /** Starts processing of one document of {@link process}; `doc` is undefined when it was not found. */
  private async startProcessing(ctx: CallContext, id: string, doc: DocumentEntity | undefined): Promise<ProcessOutcome> {
    const skipped = (reason: SkipReason): ProcessOutcome => ({ kind: 'skipped', documentId: id, reason });
    if (!doc) return skipped('not_found');
    if (doc.status !== 'awaiting_upload') return skipped('not_awaiting_upload');
    try {
      const located = await this.locateUpload(doc);
      const info = located?.info;
      if (!located || !info) return skipped('upload_not_found');
      if (info.size !== doc.declaredSizeBytes) return skipped('size_mismatch');
      if (info.contentType !== null && normalizeContentType(info.contentType) !== doc.contentType) return skipped('content_type_mismatch');
      const now = new Date();
      const started = await this.deps.repository.startProcessing(ctx.orgId, id, info.size, now, doc.replaces, ctx);
      if (started === 'not_awaiting_upload') return skipped('not_awaiting_upload');
      if (started === 'replacement_conflict') {
        return {
          kind: 'failed',
          documentId: id,
          error: 'CONFLICT',
          message: `The document it replaces (${doc.replaces}) is already superseded or being replaced by another version that is processing. The document is still awaiting processing.`,
        };
      }
      if (doc.uploadKey !== null && !located.moved) {
        try {
          await this.closeSlotAndMove(doc, info);
        } catch (error) {
          // The slot stays open: its bytes must not be swept as a late upload once the URL expires.
          await this.deps.storage.reopenUploads(doc.uploadKey).catch(() => undefined);
          await this.deps.repository.forgetClosedUpload(doc.uploadKey).catch(() => undefined);
          await this.deps.repository.revertToAwaitingUpload(ctx.orgId, id, ctx);
          if (!isStorageError(error, 'PRECONDITION_FAILED')) throw error;
          return {
            kind: 'failed',
            documentId: id,
            error: 'CONFLICT',
            message: 'The upload was replaced while processing was starting. The document is still awaiting processing; retry.',
          };
        }
      }
      try {
        await this.deps.publishProcessRequested({
          documentId: id,
          orgId: ctx.orgId,
          projectId: doc.projectId,
          fileName: doc.fileName,
          contentType: doc.contentType,
          sizeBytes: info.size,
          storageKey: doc.storageKey,
          requestedAt: now.toISOString(),
        });
      } catch (error) {
        await this.deps.repository.revertToAwaitingUpload(ctx.orgId, id, ctx);
        throw error;
      }
      return { kind: 'processed', documentId: id };
    } catch (error) {
      return {
        kind: 'failed',
        documentId: id,
        error: error instanceof AppError ? error.code : 'SERVICE_UNAVAILABLE',
        message: 'Processing could not be started because a backing service is unavailable. The document is still awaiting processing; retry.',
      };
    }
  }

  /**
   * Where a document's uploaded bytes are: at its upload key (awaiting processing), or already at
   * its storage key (`moved`: an earlier process call moved them, then could not publish).
   * Documents reserved before upload slots existed have only the storage key.
   * @returns null when nothing was uploaded.
   */
  private async locateUpload(doc: DocumentEntity): Promise<{ info: ObjectInfo; moved: boolean } | null> {
    if (doc.uploadKey !== null) {
      const info = await this.deps.storage.stat(doc.uploadKey);
      if (info) return { info, moved: false };
    }
    const info = await this.deps.storage.stat(doc.storageKey);
    return info ? { info, moved: doc.uploadKey !== null } : null;
  }

  /**
   * Ends the upload slot of a document that starts processing: its presigned URL is closed (the
   * local driver refuses later PUTs; on S3 a late PUT can only write the upload key, deleted by
   * {@link sweepClosedUploads} once the URL has expired) and the checked version of the upload
   * (`ifEtag`) becomes the processed original at `storageKey`, which no URL can write.
   * @throws StorageError PRECONDITION_FAILED when the upload was replaced after it was checked.
   */
  private async closeSlotAndMove(doc: DocumentEntity, checked: ObjectInfo): Promise<void> {
    const uploadKey = doc.uploadKey!;
    await this.deps.repository.recordClosedUploads([uploadKey], new Date(doc.createdAt.getTime() + UPLOAD_KEY_RETENTION_MS));
    await this.deps.storage.closeUploads(uploadKey);
    await this.deps.storage.move(uploadKey, doc.storageKey, checked.etag ? { ifEtag: checked.etag } : {});
  }

  /**
   * Deletes what late PUTs may have written to closed upload keys once their URLs have expired
   * (and the local driver's closed-URL markers). Runs on the documents sweeper's interval.
   * @returns how many keys were swept (at most 100 per call).
   */
  async sweepClosedUploads(now: Date): Promise<number> {
    const keys = await this.deps.repository.dueClosedUploads(now, 100);
    for (const key of keys) {
      await this.deps.storage.delete(key);
      await this.deps.storage.reopenUploads(key);
      await this.deps.repository.forgetClosedUpload(key);
    }
    return keys.length;
  }

  list(ctx: CallContext, filter: DocumentFilter, limit: number, offset: number) {
    return this.deps.repository.list(ctx.orgId, filter, limit, offset);
  }

  /** @throws NOT_FOUND when missing or another org's. */
  async get(ctx: CallContext, id: string): Promise<DocumentEntity> {
    const doc = await this.deps.repository.find(ctx.orgId, id);
    if (!doc) throw AppError.notFound(`Document ${id} not found.`);
    return doc;
  }

  /**
   * Presigned download of the original file, valid about 10 minutes: the processed original, or
   * (while the document is still awaiting processing) the bytes uploaded to its slot so far.
   * @throws NOT_FOUND when the document is missing, another org's, or its file is not in storage.
   */
  async download(ctx: CallContext, id: string) {
    const doc = await this.get(ctx, id);
    const located = doc.status === 'awaiting_upload' ? await this.locateUpload(doc) : null;
    const key = located && !located.moved && doc.uploadKey !== null ? doc.uploadKey : doc.storageKey;
    const info = located ? located.info : await this.deps.storage.stat(key);
    if (!info) throw AppError.notFound(`The file of document ${id} is not in storage (it was never uploaded).`);
    const presigned = await this.deps.storage.presignGet(key, {
      expiresInSeconds: DOWNLOAD_URL_TTL_SECONDS,
      fileName: downloadFileName(doc.fileName),
      contentType: doc.contentType,
    });
    return { document: doc, sizeBytes: info.size, url: presigned.url, expiresAt: presigned.expiresAt };
  }

  /**
   * Deletes documents: indexed chunks first (so they are never cited again once this returns),
   * then the stored files, then the rows. Unknown ids are ignored.
   * @throws FORBIDDEN (nothing deleted) when any id belongs to another organization.
   */
  async delete(ctx: CallContext, documentIds: string[]): Promise<string[]> {
    const ids = unique(documentIds);
    const owners = await this.deps.repository.findOwners(ids);
    const foreign = ids.filter((id) => owners.has(id) && owners.get(id) !== ctx.orgId);
    if (foreign.length > 0) {
      throw AppError.forbidden(`Documents belong to a different organization: ${foreign.join(', ')}. Nothing was deleted.`);
    }
    const docs = await this.deps.repository.findMany(ctx.orgId, ids);
    if (docs.length === 0) return [];
    const owned = docs.map((d) => d.id);
    await this.deps.deleteIndexedChunks(ctx.orgId, owned);
    // Upload slots close first (a late PUT must not recreate an object once the document is
    // gone); on S3 anything a late PUT still writes is deleted by sweepClosedUploads.
    const slots = docs.filter((d) => d.uploadKey !== null);
    for (const d of slots) await this.deps.repository.recordClosedUploads([d.uploadKey!], new Date(d.createdAt.getTime() + UPLOAD_KEY_RETENTION_MS));
    await Promise.all(
      docs.map(async (d) => {
        if (d.uploadKey !== null) {
          await this.deps.storage.closeUploads(d.uploadKey);
          await this.deps.storage.delete(d.uploadKey);
        }
        await this.deps.storage.delete(d.storageKey);
      }),
    );
    await this.deps.repository.deleteMany(ctx.orgId, owned, ctx);
    await this.deps.publishDeleted(ctx.orgId, owned).catch(() => undefined);
    return ids.filter((id) => owned.includes(id));
  }

  /**
   * One page of a document's chunks in document order (decisions.md "Chunks").
   * @throws NOT_FOUND when the document is missing, another org's, or has no chunks yet (not
   *   ready or completed, or nothing indexed).
   */
  async listChunks(ctx: CallContext, id: string, limit: number, offset: number): Promise<{ chunks: IndexedChunk[]; total: number }> {
    await this.requireChunked(ctx, id);
    const page = await this.deps.chunks.list(ctx.orgId, id, limit, offset);
    if (page.total === 0) throw AppError.notFound(`Document ${id} has no chunks.`);
    return page;
  }

  /**
   * One chunk of a document (the `node_id` of a source or citation).
   * @throws NOT_FOUND when the document is missing, another org's, has no chunks yet, or has no
   *   chunk with this id.
   */
  async getChunk(ctx: CallContext, id: string, nodeId: string): Promise<IndexedChunk> {
    await this.requireChunked(ctx, id);
    const chunk = await this.deps.chunks.get(ctx.orgId, id, nodeId);
    if (!chunk) throw AppError.notFound(`Chunk ${nodeId} of document ${id} not found.`);
    return chunk;
  }

  /**
   * The size of page `n` (1-based) of a document, in PDF points (decisions.md "Where a quote
   * stands"): what a viewer needs to draw a quote's `boxes`.
   * @throws NOT_FOUND when the document is missing or another org's, not processed yet, failed,
   *   of a format without pages (its quotes have `boxes: []`), processed before page sizes were
   *   recorded (reprocess it), or has fewer than `n` pages.
   */
  async getPage(ctx: CallContext, id: string, n: number): Promise<{ page: number; width: number; height: number }> {
    const doc = await this.requireChunked(ctx, id);
    const sizes = doc.pageSizes;
    if (!sizes || sizes.length === 0) {
      throw AppError.notFound(
        doc.contentType === 'application/pdf'
          ? `Document ${id} has no recorded page sizes: it was processed before they were recorded. Upload it again as a new version to get pages and boxes.`
          : `Document ${id} has no pages: its format (${doc.contentType}) is not paged, so its quotes have no boxes.`,
      );
    }
    const size = sizes.find((p) => p.page === n);
    if (!size) throw AppError.notFound(`Document ${id} has ${sizes.length} page${sizes.length === 1 ? '' : 's'}; page ${n} does not exist.`);
    return { page: size.page, width: size.width, height: size.height };
  }

  private async requireChunked(ctx: CallContext, id: string): Promise<DocumentEntity> {
    const doc = await this.get(ctx, id);
    if (doc.status === 'failed') throw AppError.notFound(`Document ${id} has no chunks: its processing failed (see the document's error_message).`);
    if (!isSearchable(doc.status)) {
      throw AppError.notFound(`Document ${id} has no chunks yet: it is ${doc.status.replace('_', ' ')}. Chunks are listed once it is ready.`);
    }
    return doc;
  }

  /**
   * Handbooks are the org's documents in ready or completed status (decisions.md Vocabulary).
   * @throws NOT_FOUND naming the first id that is not such a document.
   */
  async resolveHandbooks(ctx: CallContext, ids: string[]): Promise<DocumentEntity[]> {
    const wanted = unique(ids);
    const docs = new Map((await this.deps.repository.findMany(ctx.orgId, wanted)).map((d) => [d.id, d]));
    return wanted.map((id) => {
      const doc = docs.get(id);
      if (!doc || !isSearchable(doc.status)) throw AppError.notFound(`Handbook ${id} not found (it must be a processed document of your organization).`);
      return doc;
    });
  }

  /**
   * The knowledge scope of one search from one database snapshot (docs/retrieval.md "Document
   * versions: one switch point"): handbooks read as their current versions, or the documents of
   * the scope that must not be searched (superseded, processing, failed).
   */
  resolveSearchScope(ctx: CallContext, projectId: string | null, documentIds: string[]) {
    return this.deps.repository.readSearchScope(ctx.orgId, projectId, unique(documentIds));
  }

  /** The ids among `ids` that are still searchable documents of the org. */
  async filterLive(ctx: CallContext, ids: string[]): Promise<string[]> {
    const docs = await this.deps.repository.findMany(ctx.orgId, unique(ids));
    const live = new Set(docs.filter((d) => isSearchable(d.status)).map((d) => d.id));
    return ids.filter((id) => live.has(id));
  }
}

/** ready and completed documents are used by the AI (decisions.md). */
export function isSearchable(status: DocumentStatus): boolean {
  return status === 'ready' || status === 'completed';
}

import { AppError, ErrorCode, Logger } from '@kb/common';
import { Delivery } from '@kb/common';
import { ProcessRequestedEvent, StatusChangedEvent } from '@kb/events';
import { retrievalV1 } from '@kb/proto';
import type { ObjectStorage } from '@kb/storage';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { Chunk, ChunkOptions, chunkDocument } from '../chunking';
import { extractDocument, ExtractionError } from '../extraction';

export interface DocumentProcessorDeps {
  storage: ObjectStorage;
  /** Replaces the document's chunks in the index (idempotent). */
  indexChunks: (orgId: string, request: retrievalV1.IndexDocumentRequest) => Promise<void>;
  publishStatus: (event: StatusChangedEvent) => Promise<void>;
  /** Enrichment: embeds the document's indexed chunks (retrieval no-ops without an embedding model). */
  embedDocument?: (orgId: string, documentId: string) => Promise<void>;
  workDir: string;
  logger: Logger;
  /** Per-document extraction time limit (ms). */
  timeoutMs: number;
  maxPages: number;
  chunkOptions?: ChunkOptions;
}

/**
 * Deterministic chunk id (UUID-shaped SHA-1 of document id and chunk index, RFC 4122 §4.3 layout),
 * so a re-delivered document produces the same ids.
 */
export function chunkIdFor(documentId: string, index: number): string {
  const h = createHash('sha1').update(`${documentId}:${index}`).digest('hex');
  const variant = ((parseInt(h[16], 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** Converts chunker output to the retrieval contract. */
export function toIndexChunks(event: ProcessRequestedEvent, chunks: Chunk[]): retrievalV1.Chunk[] {
  return chunks.map((c) => ({
    id: chunkIdFor(event.documentId, c.index),
    documentId: event.documentId,
    projectId: event.projectId ?? undefined,
    fileName: event.fileName,
    chunkIndex: c.index,
    text: c.text,
    headingPath: c.headingPath,
    startPage: c.startPage ?? undefined,
    endPage: c.endPage ?? undefined,
    pageSpans: c.pageSpans,
  }));
}

/**
 * The ingestion pipeline for one document: fetch the original from object storage, extract text
 * per page, chunk, index, report `ready` then `completed` (no enrichment step is configured yet,
 * so it passes straight through, as decisions.md allows), or `failed` with a message a user can
 * act on. Transient failures (storage or index unavailable) throw, so JetStream redelivers; on the
 * last attempt the document is failed instead of being left in processing.
 */
export class DocumentProcessor {
  constructor(private readonly deps: DocumentProcessorDeps) {}

  async process(event: ProcessRequestedEvent, delivery: Delivery): Promise<void> {
    const log = this.deps.logger.child({ document_id: event.documentId, org_id: event.orgId, attempt: delivery.attempt });
    const dir = await mkdtemp(path.join(this.deps.workDir, 'doc-'));
    const started = Date.now();
    log.info({ content_type: event.contentType, size_bytes: event.sizeBytes }, 'processing document');
    try {
      const filePath = path.join(dir, 'original');
      const info = await this.deps.storage.stat(event.storageKey);
      if (!info) {
        await this.fail(event, 'The uploaded file is no longer in storage. Upload it again.');
        return;
      }
      await this.deps.storage.downloadToFile(event.storageKey, filePath);
      let extracted;
      try {
        extracted = await extractDocument(filePath, event.contentType, { timeoutMs: this.deps.timeoutMs, maxPages: this.deps.maxPages });
      } catch (error) {
        if (error instanceof ExtractionError) {
          log.info({ code: error.code }, 'extraction failed');
          await this.fail(event, error.message);
          return;
        }
        throw error;
      }
      const chunks = chunkDocument(extracted, this.deps.chunkOptions);
      if (chunks.length === 0) {
        await this.fail(event, 'No text could be extracted from this file. If it is a scan, upload a version with selectable text or an image format for OCR.');
        return;
      }
      await this.deps.indexChunks(event.orgId, {
        documentId: event.documentId,
        projectId: event.projectId ?? undefined,
        chunks: toIndexChunks(event, chunks),
        corpus: retrievalV1.Corpus.CORPUS_ORG,
      });
      const base = { documentId: event.documentId, orgId: event.orgId, chunkCount: chunks.length, pageCount: extracted.pageCount, errorMessage: null };
      await this.deps.publishStatus({ ...base, status: 'ready', at: new Date().toISOString() });
      await this.deps.embedDocument?.(event.orgId, event.documentId);
      await this.deps.publishStatus({ ...base, status: 'completed', at: new Date().toISOString() });
      log.info({ chunks: chunks.length, pages: extracted.pageCount, ms: Date.now() - started }, 'document processed');
    } catch (error) {
      if (delivery.isLastAttempt) {
        log.error({ err: error }, 'document failed after the last attempt');
        const reason = error instanceof AppError && error.code === ErrorCode.SERVICE_UNAVAILABLE ? ' (a backing service was unavailable)' : '';
        await this.fail(event, `Processing failed after ${delivery.maxDeliver} attempts${reason}. Upload the file again later.`);
        return;
      }
      throw error;
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  private fail(event: ProcessRequestedEvent, message: string): Promise<void> {
    return this.deps.publishStatus({
      documentId: event.documentId,
      orgId: event.orgId,
      status: 'failed',
      chunkCount: null,
      pageCount: null,
      errorMessage: message,
      at: new Date().toISOString(),
    });
  }
}

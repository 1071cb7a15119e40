import { bigintAsNumber, OutboxEventInput } from '@kb/common';
import type { DocumentProgress, DocumentStatus, WebhookEventType } from '@kb/events';
import { Column, Entity, PrimaryColumn } from 'typeorm';

export type { DocumentStatus };

/** A document of one organization (table `documents.documents`). */
@Entity({ name: 'documents' })
export class DocumentEntity {
  @PrimaryColumn({ type: 'uuid' }) id: string;
  @Column({ name: 'org_id', type: 'text' }) orgId: string;
  @Column({ name: 'project_id', type: 'uuid', nullable: true }) projectId: string | null;
  @Column({ name: 'file_name', type: 'varchar', length: 500 }) fileName: string;
  @Column({ name: 'content_type', type: 'text' }) contentType: string;
  @Column({ name: 'declared_size_bytes', type: 'bigint', transformer: bigintAsNumber }) declaredSizeBytes: number;
  @Column({ name: 'size_bytes', type: 'bigint', nullable: true, transformer: bigintAsNumber }) sizeBytes: number | null;
  @Column({ type: 'text' }) status: DocumentStatus;
  @Column({ name: 'chunk_count', type: 'integer', nullable: true }) chunkCount: number | null;
  @Column({ name: 'page_count', type: 'integer', nullable: true }) pageCount: number | null;
  /** PDFs: each page's size in points, in page order (decisions.md "Where a quote stands"); null otherwise. */
  @Column({ name: 'page_sizes', type: 'jsonb', nullable: true }) pageSizes: { page: number; width: number; height: number }[] | null;
  @Column({ name: 'error_message', type: 'text', nullable: true }) errorMessage: string | null;
  /** Key of the processed original (what ingestion reads and downloads serve). */
  @Column({ name: 'storage_key', type: 'text' }) storageKey: string;
  /**
   * Key the presigned upload URL writes: `uploads/<id>/<128 random bits>`, one per reservation,
   * moved to `storageKey` at process. Null for documents reserved before upload slots existed.
   */
  @Column({ name: 'upload_key', type: 'text', nullable: true }) uploadKey: string | null;
  /** Where processing is (decisions.md "Document processing progress"); null outside processing/ready. */
  @Column({ type: 'jsonb', nullable: true }) progress: DocumentProgress | null;
  /** Time of the event that set `progress` (progress events older than it are ignored). */
  @Column({ name: 'progress_at', type: 'timestamptz', nullable: true }) progressAt: Date | null;
  /** Version in its chain of revisions: 1 for a first upload, the replaced one's + 1 otherwise. */
  @Column({ type: 'integer', default: 1 }) version: number;
  /** The previous version (decisions.md "Document versions"), or null. */
  @Column({ type: 'uuid', nullable: true }) replaces: string | null;
  /** The next version, set when it became ready: this document is out of the knowledge scope. */
  @Column({ name: 'superseded_by', type: 'uuid', nullable: true }) supersededBy: string | null;
  @Column({ name: 'processing_started_at', type: 'timestamptz', nullable: true }) processingStartedAt: Date | null;
  @Column({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
  @Column({ name: 'updated_at', type: 'timestamptz' }) updatedAt: Date;
}

/** Progress of a document whose processing was requested and not yet picked up by ingestion. */
export const INITIAL_PROGRESS: DocumentProgress = { stage: 'extracting', pagesDone: null, pagesTotal: null };
/** Progress at `ready` when the event names no enrichment stage (older ingestion versions). */
export const READY_PROGRESS: DocumentProgress = { stage: 'indexing', pagesDone: null, pagesTotal: null };

/** The webhook events of a document's state changes (`document.ready`, `.completed`, `.failed`, `.deleted`…). */
export type DocumentEventType = Extract<WebhookEventType, `document.${string}`>;

/**
 * Builds the webhook events the DocumentsRepository writes to the outbox in the transaction of each
 * state change. The documents service supplies them (`documentEvents`, document-events.ts), since the
 * event's `data` is the document's public JSON; the repository decides when one is due and writes it.
 */
export interface DocumentEventBuilders {
  /** The event of a document's state change, `data` the document as GET shows it. */
  document(type: DocumentEventType, document: DocumentEntity, at: Date): OutboxEventInput;
}

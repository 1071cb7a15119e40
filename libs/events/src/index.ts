/**
 * Event subjects and payloads exchanged over NATS JetStream. One stream, `KB_DOCUMENTS`, holds
 * every documents.* event; each consumer is durable with explicit acks.
 */
export const DOCUMENTS_STREAM = 'KB_DOCUMENTS';
export const DOCUMENTS_STREAM_SUBJECTS = ['documents.>'];

export const Subjects = {
  /** documents → ingestion: extract, chunk and index one document. */
  processRequested: 'documents.process.requested',
  /** ingestion → documents: a status transition of one document. */
  statusChanged: 'documents.status.changed',
  /** documents → anyone: documents were deleted (their chunks are already gone). */
  deleted: 'documents.deleted',
} as const;

/** Payload of `documents.process.requested`. */
export interface ProcessRequestedEvent {
  documentId: string;
  orgId: string;
  projectId: string | null;
  fileName: string;
  contentType: string;
  sizeBytes: number;
  storageKey: string;
  requestedAt: string;
}

/** Document statuses after processing starts. */
export type ProcessingOutcome = 'ready' | 'completed' | 'failed';

/** Payload of `documents.status.changed`. */
export interface StatusChangedEvent {
  documentId: string;
  orgId: string;
  status: ProcessingOutcome;
  chunkCount: number | null;
  pageCount: number | null;
  /** Words a user can act on, when status is failed. */
  errorMessage: string | null;
  at: string;
}

/** Payload of `documents.deleted`. */
export interface DocumentsDeletedEvent {
  orgId: string;
  documentIds: string[];
  at: string;
}

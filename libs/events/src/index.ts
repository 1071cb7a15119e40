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
  /**
   * ingestion → documents: where the processing of one document is (stage, pages), published at
   * most about once a second while a stage runs (decisions.md "Document processing progress").
   */
  progressChanged: 'documents.progress.changed',
  /** documents → anyone: documents were deleted (their chunks are already gone). */
  deleted: 'documents.deleted',
  /**
   * ingestion → operators: a `documents.process.requested` message that could not be processed
   * (malformed payload, or every delivery crashed or timed out). Kept in the stream (7 days) for
   * inspection; see docs/ingestion.md.
   */
  processDeadLetter: 'documents.process.dead_letter',
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

/**
 * Why `POST /api/v2/documents/process` skipped a document (its `skipped[].reason`), as the documents
 * service decides (DocumentsService.startProcessing): `not_found` (no such document in the
 * organization), `not_awaiting_upload` (its processing already started), `upload_not_found` (no
 * file was PUT to its upload URL), `size_mismatch` (the stored file's size differs from the
 * declared `size_bytes`), `content_type_mismatch` (the file was PUT with another content type
 * than the declared one).
 */
export const SKIP_REASONS = ['not_found', 'not_awaiting_upload', 'upload_not_found', 'size_mismatch', 'content_type_mismatch'] as const;
export type SkipReason = (typeof SKIP_REASONS)[number];

/** Processing stages, in the order a document goes through them (OCR may come before or after `ready`). */
export const PROGRESS_STAGES = ['extracting', 'ocr', 'chunking', 'indexing', 'embedding'] as const;
export type ProgressStage = (typeof PROGRESS_STAGES)[number];

/**
 * Where a document's processing is. `pagesDone`/`pagesTotal` count pages where the stage works
 * page by page (extraction of paged formats; OCR, where they count the pages being OCRed), else null.
 */
export interface DocumentProgress {
  stage: ProgressStage;
  pagesDone: number | null;
  pagesTotal: number | null;
}

/** Payload of `documents.progress.changed`. */
export interface ProgressChangedEvent {
  documentId: string;
  orgId: string;
  progress: DocumentProgress;
  /** When the stage reached this point (ISO 8601); older events than the stored progress are ignored. */
  at: string;
}

/** Payload of `documents.status.changed`. */
export interface StatusChangedEvent {
  documentId: string;
  orgId: string;
  status: ProcessingOutcome;
  chunkCount: number | null;
  pageCount: number | null;
  /**
   * With `ready`/`completed` of a PDF: each page's size in points (`GET …/pages/{n}`); absent or
   * null for formats without pages (and from ingestion versions before page sizes were recorded).
   */
  pageSizes?: { page: number; width: number; height: number }[] | null;
  /** Words a user can act on, when status is failed. */
  errorMessage: string | null;
  /**
   * With `ready`: the enrichment stage that starts now (its progress); absent or null otherwise
   * (progress is cleared at `completed` and `failed`).
   */
  progress?: DocumentProgress | null;
  at: string;
}

/** Payload of `documents.process.dead_letter`. */
export interface ProcessDeadLetterEvent {
  /** Subject and stream sequence of the original message (sequence null when not known to the consumer). */
  subject: string;
  streamSequence: number | null;
  /** Deliveries made before giving up (0 when the payload was rejected without retries). */
  deliveries: number;
  /** Why it was dead-lettered, e.g. `max deliveries reached` or `malformed payload: ...`. */
  reason: string;
  /** The original payload, as sent (UTF-8). */
  payload: string;
  /** Document concerned, when the payload names one. */
  documentId: string | null;
  at: string;
}

/** Payload of `documents.deleted`. */
export interface DocumentsDeletedEvent {
  orgId: string;
  documentIds: string[];
  at: string;
}

/**
 * Model-token accounting for monthly quotas. The agent and check services publish one
 * `usage.tokens.recorded` event per model call (the embedded default reports its own count); the
 * gateway consumes them and adds `totalTokens` to the organization's counter for the month of `at`.
 * Publish with `msgId = id` so a retried publish is counted once (JetStream de-duplication).
 */
export const USAGE_STREAM = 'KB_USAGE';
export const USAGE_STREAM_SUBJECTS = ['usage.>'];
export const UsageSubjects = {
  /** agent/check → gateway: model tokens used on behalf of an organization. */
  tokensRecorded: 'usage.tokens.recorded',
} as const;

/** Payload of `usage.tokens.recorded`. */
export interface TokensRecordedEvent {
  /** UUID of this record; also the JetStream msgID for de-duplication. */
  id: string;
  orgId: string;
  /** What used the tokens, e.g. `agent.query`, `agent.chat`, `agent.batch`, `check.verify`, `check.run`. */
  source: string;
  /** Model name as reported to clients (`embedded-extractive` for the embedded default). */
  model: string;
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
  /** ISO 8601 UTC time of the call; decides the quota month. */
  at: string;
}

/**
 * Check-run work items. `check.requirements.requested` carries a small group of requirements of one
 * run; the check service's durable pull consumer `check-runs` processes them with explicit acks.
 */
export const CHECK_STREAM = 'KB_CHECK';
export const CHECK_STREAM_SUBJECTS = ['check.>'];
export const CheckSubjects = {
  /** check (trigger) → check (workers): check these requirements of a run. */
  requirementsRequested: 'check.requirements.requested',
} as const;

/** Payload of `check.requirements.requested`. */
export interface CheckRequirementsRequestedEvent {
  orgId: string;
  runId: string;
  /** Trigger generation of the run: items of an older trigger (before a stop or re-trigger) are skipped. */
  generation: number;
  projectId: string;
  /** Restrict evidence to these documents; empty = the project's knowledge scope. */
  handbookIds: string[];
  skipBreakdown: boolean;
  requirementIds: string[];
}

/**
 * Work items of batch queries (agent service only): one message per question, published when the
 * batch is created (msgId `<batchId>:<index>`), consumed by the agent's batch workers with
 * explicit acks, so a worker that dies mid-question leaves the item to be redelivered.
 */
export const AGENT_STREAM = 'KB_AGENT';
export const AGENT_STREAM_SUBJECTS = ['agent.>'];
export const AgentSubjects = {
  /** agent → agent workers: answer one question of a batch. */
  batchQuestion: 'agent.batch.question',
} as const;

/** Payload of `agent.batch.question`. */
export interface BatchQuestionEvent {
  batchId: string;
  orgId: string;
  index: number;
}
export * from './webhooks';
export * from './statuses';
export * from './justification';

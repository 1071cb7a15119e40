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

import { protoEnumCodec } from '@kb/common';
import { agentV1, checkV1, documentsV1 } from '@kb/proto';

/**
 * The status values of every resource, defined once: the services' domain types, the gateway's
 * query validation and OpenAPI enums, and (through the codecs) the proto enums of the gRPC
 * contracts. The API shows these strings (decisions.md); the proto carries the enum numbers.
 */

/** Lifecycle of a document (decisions.md "Documents"). */
export const DOCUMENT_STATUSES = ['awaiting_upload', 'processing', 'ready', 'completed', 'failed'] as const;
export type DocumentStatus = (typeof DOCUMENT_STATUSES)[number];
/** Document status ↔ `kb.documents.v1.DocumentStatus`. */
export const documentStatus = protoEnumCodec<DocumentStatus, documentsV1.DocumentStatus>(documentsV1.DocumentStatus, 'DOCUMENT_STATUS', DOCUMENT_STATUSES);

/** Lifecycle of a check run (decisions.md "Check"). */
export const RUN_STATUSES = ['pending', 'processing', 'completed', 'stopped', 'failed'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
/** Run status ↔ `kb.check.v1.RunStatus`. */
export const runStatus = protoEnumCodec<RunStatus, checkV1.RunStatus>(checkV1.RunStatus, 'RUN_STATUS', RUN_STATUSES);

/** Lifecycle of one requirement of a run. */
export const REQUIREMENT_STATUSES = ['pending', 'processing', 'completed'] as const;
export type RequirementStatus = (typeof REQUIREMENT_STATUSES)[number];
/** Requirement status ↔ `kb.check.v1.RequirementStatus`. */
export const requirementStatus = protoEnumCodec<RequirementStatus, checkV1.RequirementStatus>(checkV1.RequirementStatus, 'REQUIREMENT_STATUS', REQUIREMENT_STATUSES);

/** Outcome of one sub-requirement. */
export const SUB_REQUIREMENT_STATUSES = ['comply', 'not-comply', 'pending'] as const;
export type SubRequirementStatus = (typeof SUB_REQUIREMENT_STATUSES)[number];
/** Sub-requirement status ↔ `kb.check.v1.SubRequirementStatus`. */
export const subRequirementStatus = protoEnumCodec<SubRequirementStatus, checkV1.SubRequirementStatus>(
  checkV1.SubRequirementStatus,
  'SUB_REQUIREMENT_STATUS',
  SUB_REQUIREMENT_STATUSES,
);

/** Lifecycle of a batch (decisions.md "Batches"). */
export const BATCH_STATUSES = ['pending', 'processing', 'completed', 'failed'] as const;
export type BatchStatus = (typeof BATCH_STATUSES)[number];
/** Batch status ↔ `kb.agent.v1.BatchStatus`. */
export const batchStatus = protoEnumCodec<BatchStatus, agentV1.BatchStatus>(agentV1.BatchStatus, 'BATCH_STATUS', BATCH_STATUSES);

/** State of one question of a batch. */
export const BATCH_QUESTION_STATUSES = ['pending', 'completed', 'failed'] as const;
export type BatchQuestionStatus = (typeof BATCH_QUESTION_STATUSES)[number];
/** Batch question status ↔ `kb.agent.v1.BatchQuestionStatus`. */
export const batchQuestionStatus = protoEnumCodec<BatchQuestionStatus, agentV1.BatchQuestionStatus>(
  agentV1.BatchQuestionStatus,
  'BATCH_QUESTION_STATUS',
  BATCH_QUESTION_STATUSES,
);

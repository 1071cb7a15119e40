import { protoEnumCodec, ValueOf } from '@kb/common';
import { agentV1, checkV1, documentsV1, webhooksV1 } from '@kb/proto';

/**
 * The status values of every resource, defined once: the services' domain types, the gateway's
 * query validation and OpenAPI enums, and (through the codecs) the proto enums of the gRPC
 * contracts. The API shows these strings (decisions.md); the proto carries the enum numbers.
 */

/** Lifecycle of a document (decisions.md "Documents"), `kb.documents.v1.DocumentStatus`. */
export const documentStatus = protoEnumCodec(documentsV1.DocumentStatus, 'DOCUMENT_STATUS', ['awaiting_upload', 'processing', 'ready', 'completed', 'failed']);
/** Lifecycle of a check run (decisions.md "Check"), `kb.check.v1.RunStatus`. */
export const runStatus = protoEnumCodec(checkV1.RunStatus, 'RUN_STATUS', ['pending', 'processing', 'completed', 'stopped', 'failed']);
/** Lifecycle of one requirement of a run, `kb.check.v1.RequirementStatus`. */
export const requirementStatus = protoEnumCodec(checkV1.RequirementStatus, 'REQUIREMENT_STATUS', ['pending', 'processing', 'completed']);
/** Outcome of one sub-requirement, `kb.check.v1.SubRequirementStatus`. */
export const subRequirementStatus = protoEnumCodec(checkV1.SubRequirementStatus, 'SUB_REQUIREMENT_STATUS', ['comply', 'not-comply', 'pending']);
/** Lifecycle of a batch (decisions.md "Batches"), `kb.agent.v1.BatchStatus`. */
export const batchStatus = protoEnumCodec(agentV1.BatchStatus, 'BATCH_STATUS', ['pending', 'processing', 'completed', 'failed']);
/** State of one question of a batch, `kb.agent.v1.BatchQuestionStatus`. */
export const batchQuestionStatus = protoEnumCodec(agentV1.BatchQuestionStatus, 'BATCH_QUESTION_STATUS', ['pending', 'completed', 'failed']);
/** State of one webhook delivery (docs/webhooks.md), `kb.webhooks.v1.DeliveryStatus`. */
export const deliveryStatus = protoEnumCodec(webhooksV1.DeliveryStatus, 'DELIVERY_STATUS', ['pending', 'succeeded', 'failed']);

export type DocumentStatus = ValueOf<typeof documentStatus>;
export type RunStatus = ValueOf<typeof runStatus>;
export type RequirementStatus = ValueOf<typeof requirementStatus>;
export type SubRequirementStatus = ValueOf<typeof subRequirementStatus>;
export type BatchStatus = ValueOf<typeof batchStatus>;
export type BatchQuestionStatus = ValueOf<typeof batchQuestionStatus>;
export type DeliveryStatus = ValueOf<typeof deliveryStatus>;

/** The values of each status, in lifecycle order (query validation, OpenAPI enums). */
export const DOCUMENT_STATUSES = documentStatus.values;
export const RUN_STATUSES = runStatus.values;
export const REQUIREMENT_STATUSES = requirementStatus.values;
export const SUB_REQUIREMENT_STATUSES = subRequirementStatus.values;
export const BATCH_STATUSES = batchStatus.values;
export const BATCH_QUESTION_STATUSES = batchQuestionStatus.values;
export const DELIVERY_STATUSES = deliveryStatus.values;

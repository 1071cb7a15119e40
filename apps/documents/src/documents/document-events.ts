import { OutboxEventInput } from '@kb/common';
import { presentDocument, WebhookEventType } from '@kb/events';
import { documentsV1 } from '@kb/proto';
import { DocumentEntity } from './document.entity';

/** A document as its gRPC message (what the gateway presents). */
export function toProtoDocument(d: DocumentEntity): documentsV1.Document {
  return {
    id: d.id,
    orgId: d.orgId,
    projectId: d.projectId ?? undefined,
    fileName: d.fileName,
    contentType: d.contentType,
    sizeBytes: d.sizeBytes ?? undefined,
    status: d.status,
    chunkCount: d.chunkCount ?? undefined,
    errorMessage: d.errorMessage ?? undefined,
    createdAt: d.createdAt.toISOString(),
    updatedAt: d.updatedAt.toISOString(),
  };
}

/** The webhook event of a document's state change, `data` being the document as GET shows it. */
export function documentEvent(type: Extract<WebhookEventType, `document.${string}`>, d: DocumentEntity, at: Date): OutboxEventInput {
  return { type, orgId: d.orgId, resourceKey: `document:${d.id}`, data: presentDocument(toProtoDocument(d)), at };
}

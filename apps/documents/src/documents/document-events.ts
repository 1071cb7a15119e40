import { OutboxEventInput } from '@kb/common';
import { presentDocument } from '@kb/events';
import { toProtoDocument } from '../grpc/documents.mappers';
import type { DocumentEntity, DocumentEventBuilders, DocumentEventType } from './document.entity';

/** The webhook event of a document's state change, `data` being the document as GET shows it. */
export function documentEvent(type: DocumentEventType, d: DocumentEntity, at: Date): OutboxEventInput {
  return { type, orgId: d.orgId, resourceKey: `document:${d.id}`, data: presentDocument(toProtoDocument(d)), at };
}

/** The documents service's webhook events, handed to the DocumentsRepository that writes them (main.ts). */
export const documentEvents: DocumentEventBuilders = { document: documentEvent };

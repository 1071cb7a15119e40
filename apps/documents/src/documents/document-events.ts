import { OutboxEventInput, pickFields } from '@kb/common';
import { DocumentProgress, documentStatus, presentDocument, WebhookEventType } from '@kb/events';
import { documentsV1 } from '@kb/proto';
import { DocumentEntity } from './document.entity';

/** Progress of a document whose processing was requested and not yet picked up by ingestion. */
export const INITIAL_PROGRESS: DocumentProgress = { stage: 'extracting', pagesDone: null, pagesTotal: null };
/** Progress at `ready` when the event names no enrichment stage (older ingestion versions). */
export const READY_PROGRESS: DocumentProgress = { stage: 'indexing', pagesDone: null, pagesTotal: null };

/** A document as its gRPC message (what the gateway presents). */
export function toProtoDocument(d: DocumentEntity): documentsV1.Document {
  return {
    ...pickFields(
      d,
      ['id', 'orgId', 'projectId', 'fileName', 'contentType', 'sizeBytes', 'chunkCount', 'errorMessage', 'version', 'replaces', 'supersededBy'],
      undefined,
    ),
    status: documentStatus.toProto(d.status),
    createdAt: d.createdAt.toISOString(),
    updatedAt: d.updatedAt.toISOString(),
    progress: progressOf(d),
  };
}

/**
 * A document's progress as shown: only while processing or ready (a stale value never shows on a
 * finished document); rows that started before progress was recorded show the stage their
 * status implies (`extracting` while processing, `indexing` once ready).
 */
function progressOf(d: DocumentEntity): documentsV1.DocumentProgress | undefined {
  if (d.status !== 'processing' && d.status !== 'ready') return undefined;
  const p = d.progress ?? (d.status === 'processing' ? INITIAL_PROGRESS : READY_PROGRESS);
  return { stage: p.stage, pagesDone: p.pagesDone ?? undefined, pagesTotal: p.pagesTotal ?? undefined };
}

/** The webhook event of a document's state change, `data` being the document as GET shows it. */
export function documentEvent(type: Extract<WebhookEventType, `document.${string}`>, d: DocumentEntity, at: Date): OutboxEventInput {
  return { type, orgId: d.orgId, resourceKey: `document:${d.id}`, data: presentDocument(toProtoDocument(d)), at };
}

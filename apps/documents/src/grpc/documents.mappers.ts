import { pickFields } from '@kb/common';
import { documentStatus } from '@kb/events';
import { documentsV1 } from '@kb/proto';
import { DocumentEntity, INITIAL_PROGRESS, READY_PROGRESS } from '../documents/document.entity';

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

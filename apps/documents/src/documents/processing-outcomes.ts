import { Logger } from '@kb/common';
import { ProgressChangedEvent, StatusChangedEvent } from '@kb/events';
import { DocumentsRepository } from './documents.repository';

/**
 * Applies ingestion's status events to the documents table, and fails documents stuck in
 * `processing` (a worker died on its last attempt, or the event was lost) so that no document
 * stays in processing forever (decisions.md "Documents").
 */
export class ProcessingOutcomes {
  constructor(
    private readonly repository: DocumentsRepository,
    private readonly deleteIndexedChunks: (orgId: string, documentIds: string[]) => Promise<void>,
    private readonly logger: Logger,
  ) {}

  /** Handler of documents.status.changed. Idempotent; cleans up chunks of deleted documents. */
  async onStatusChanged(event: StatusChangedEvent): Promise<void> {
    const result = await this.repository.applyOutcome(
      event.orgId,
      event.documentId,
      {
        status: event.status,
        chunkCount: event.chunkCount,
        pageCount: event.pageCount,
        pageSizes: event.pageSizes ?? null,
        errorMessage: event.errorMessage,
        progress: event.progress ?? null,
      },
      new Date(event.at),
    );
    if (result === 'missing') {
      // Deleted while it was being processed: make sure nothing of it stays searchable.
      await this.deleteIndexedChunks(event.orgId, [event.documentId]);
    }
    this.logger.info({ document_id: event.documentId, status: event.status, result }, 'document status event');
  }

  /**
   * Handler of documents.progress.changed: stores the progress of a document that is processing or
   * ready, unless a newer state is stored (late or redelivered events change nothing).
   */
  async onProgressChanged(event: ProgressChangedEvent): Promise<void> {
    await this.repository.applyProgress(event.orgId, event.documentId, event.progress, new Date(event.at));
  }

  /**
   * Fails every document that has been processing for longer than `timeoutMs`.
   * @returns how many documents were failed.
   */
  async sweep(timeoutMs: number): Promise<number> {
    const cutoff = new Date(Date.now() - timeoutMs);
    const stuck = await this.repository.findStuck(cutoff, 100);
    const minutes = Math.round(timeoutMs / 60000);
    let failed = 0;
    for (const doc of stuck) {
      const result = await this.repository.applyOutcome(
        doc.orgId,
        doc.id,
        {
          status: 'failed',
          chunkCount: null,
          pageCount: null,
          errorMessage: `Processing did not finish within ${minutes} minutes and was stopped. Upload the file again; if it fails again, split it into smaller files.`,
        },
        new Date(),
      );
      if (result === 'applied') {
        failed++;
        await this.deleteIndexedChunks(doc.orgId, [doc.id]).catch((err) =>
          this.logger.warn({ err, document_id: doc.id }, 'could not delete chunks of a stuck document'),
        );
        this.logger.warn({ document_id: doc.id, org_id: doc.orgId }, 'document stuck in processing was failed');
      }
    }
    return failed;
  }
}

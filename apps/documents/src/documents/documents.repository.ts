import type { DocumentProgress } from '@kb/events';
import { AuditOrigin, enqueueWebhookEvent, enqueueWebhookEvents, recordAuditEvent } from '@kb/common';
import { DataSource, In, Repository } from 'typeorm';
import { documentEvent, INITIAL_PROGRESS, READY_PROGRESS } from './document-events';
import { DocumentEntity, DocumentStatus } from './document.entity';


export interface DocumentFilter {
  projectId?: string;
  documentIds?: string[];
  status?: DocumentStatus;
}

/**
 * Data access for documents. Every read and write filters by the caller's org id; the only
 * cross-org query (`findOwners`) returns owners only, for the 403 rule of document deletion.
 */
export class DocumentsRepository {
  private readonly repo: Repository<DocumentEntity>;

  constructor(private readonly dataSource: DataSource) {
    this.repo = dataSource.getRepository(DocumentEntity);
  }

  /** Inserts a document (an upload slot) and its `document.created` audit event, in one transaction. */
  async insert(doc: DocumentEntity, origin?: AuditOrigin): Promise<void> {
    await this.dataSource.transaction(async (m) => {
      await m.getRepository(DocumentEntity).insert(doc);
      await recordAuditEvent(m, {
        orgId: doc.orgId, action: 'document.created', resourceType: 'document', resourceId: doc.id, origin, at: doc.createdAt,
        data: { after: { file_name: doc.fileName, content_type: doc.contentType, size_bytes: doc.declaredSizeBytes, project_id: doc.projectId, status: doc.status } },
      });
    });
  }

  find(orgId: string, id: string): Promise<DocumentEntity | null> {
    return this.repo.findOne({ where: { orgId, id } });
  }

  findMany(orgId: string, ids: string[]): Promise<DocumentEntity[]> {
    if (ids.length === 0) return Promise.resolve([]);
    return this.repo.find({ where: { orgId, id: In(ids) } });
  }

  /** Owner org of each existing id (any org). Used only to detect foreign ids. */
  async findOwners(ids: string[]): Promise<Map<string, string>> {
    if (ids.length === 0) return new Map();
    const rows: { id: string; org_id: string }[] = await this.dataSource.query(
      `SELECT id, org_id FROM documents WHERE id = ANY($1::uuid[])`,
      [ids],
    );
    return new Map(rows.map((r) => [r.id, r.org_id]));
  }

  /** Newest first. */
  async list(orgId: string, filter: DocumentFilter, limit: number, offset: number): Promise<{ items: DocumentEntity[]; total: number }> {
    const where: Record<string, unknown> = { orgId };
    if (filter.projectId) where.projectId = filter.projectId;
    if (filter.documentIds && filter.documentIds.length > 0) where.id = In(filter.documentIds);
    if (filter.status) where.status = filter.status;
    const [items, total] = await this.repo.findAndCount({
      where,
      order: { createdAt: 'DESC', id: 'DESC' },
      take: limit,
      skip: offset,
    });
    return { items, total };
  }

  /**
   * Moves a document from awaiting_upload to processing, only if it is still awaiting upload
   * (compare-and-set, so two concurrent process calls start it once); the transition records
   * `document.process_requested` in the audit log in the same transaction.
   * @returns whether this call made the transition.
   */
  async startProcessing(orgId: string, id: string, sizeBytes: number, at: Date, origin?: AuditOrigin): Promise<boolean> {
    return this.dataSource.transaction(async (m) => {
      const result = await m.getRepository(DocumentEntity).update(
        { orgId, id, status: 'awaiting_upload' },
        // Queued for ingestion: shown as the first stage until ingestion reports its own progress
        // (progress_at stays null so that ingestion's first event applies whatever its clock says).
        { status: 'processing', sizeBytes, processingStartedAt: at, updatedAt: at, errorMessage: null, progress: INITIAL_PROGRESS, progressAt: null },
      );
      if ((result.affected ?? 0) === 0) return false;
      await recordAuditEvent(m, {
        orgId, action: 'document.process_requested', resourceType: 'document', resourceId: id, origin, at,
        data: { size_bytes: sizeBytes, before: { status: 'awaiting_upload' }, after: { status: 'processing' } },
      });
      return true;
    });
  }

  /**
   * Undoes startProcessing when the processing request could not be published; the reversal is
   * recorded as `document.process_reverted` (events are never removed), in the same transaction.
   */
  async revertToAwaitingUpload(orgId: string, id: string, origin?: AuditOrigin): Promise<void> {
    await this.dataSource.transaction(async (m) => {
      const at = new Date();
      const result = await m.getRepository(DocumentEntity).update(
        { orgId, id, status: 'processing' },
        { status: 'awaiting_upload', sizeBytes: null, processingStartedAt: null, updatedAt: at, progress: null, progressAt: null },
      );
      if ((result.affected ?? 0) === 0) return;
      await recordAuditEvent(m, {
        orgId, action: 'document.process_reverted', resourceType: 'document', resourceId: id, origin, at,
        data: { before: { status: 'processing' }, after: { status: 'awaiting_upload' } },
      });
    });
  }

  /**
   * Applies a processing outcome if the transition is allowed from the current status
   * (processing → ready|completed|failed, ready → completed|failed). Idempotent under redelivery.
   * An applied transition writes its webhook event (`document.<status>`) to the outbox in the
   * same transaction.
   * @returns 'applied', 'ignored' (stale or repeated event) or 'missing' (document deleted).
   */
  async applyOutcome(
    orgId: string,
    id: string,
    outcome: {
      status: 'ready' | 'completed' | 'failed';
      chunkCount: number | null;
      pageCount: number | null;
      errorMessage: string | null;
      /** With `ready`: the enrichment stage that starts (default: `indexing`, until enrichment reports). */
      progress?: DocumentProgress | null;
    },
    at: Date,
  ): Promise<'applied' | 'ignored' | 'missing'> {
    const from: DocumentStatus[] = outcome.status === 'ready' ? ['processing'] : ['processing', 'ready'];
    return this.dataSource.transaction(async (m) => {
      const repo = m.getRepository(DocumentEntity);
      const [current]: { status: DocumentStatus }[] = await m.query(`SELECT status FROM documents WHERE org_id = $1 AND id = $2 FOR UPDATE`, [orgId, id]);
      const result = await repo.update(
        { orgId, id, status: In(from) },
        {
          status: outcome.status,
          chunkCount: outcome.status === 'failed' ? null : outcome.chunkCount,
          pageCount: outcome.pageCount,
          errorMessage: outcome.status === 'failed' ? outcome.errorMessage : null,
          // Progress is shown while processing or ready, and cleared at completed and failed.
          progress: outcome.status === 'ready' ? (outcome.progress ?? READY_PROGRESS) : null,
          progressAt: at,
          updatedAt: at,
        },
      );
      if ((result.affected ?? 0) > 0) {
        const doc = (await repo.findOne({ where: { orgId, id } }))!;
        // `completed` straight from `processing` (its `ready` status event was handled after it,
        // and ignored): the document became searchable all the same, so `document.ready` still
        // goes out, first.
        if (outcome.status === 'completed' && current?.status === 'processing') await enqueueWebhookEvent(m, documentEvent('document.ready', doc, at));
        await enqueueWebhookEvent(m, documentEvent(`document.${outcome.status}`, doc, at));
        return 'applied';
      }
      return (await repo.findOne({ where: { orgId, id } })) ? 'ignored' : 'missing';
    });
  }

  /**
   * Records a progress report of a document that is still processing or ready, unless a newer
   * state is already stored (`progress_at` later than `at`: events may arrive out of order).
   * Does not touch `updated_at` (progress is not a change of the resource's state).
   * @returns whether the progress was stored.
   */
  async applyProgress(orgId: string, id: string, progress: DocumentProgress, at: Date): Promise<boolean> {
    const result = await this.repo
      .createQueryBuilder()
      .update()
      .set({ progress, progressAt: at })
      .where(`org_id = :orgId AND id = :id AND status IN ('processing', 'ready') AND (progress_at IS NULL OR progress_at <= :at)`, { orgId, id, at })
      .execute();
    return (result.affected ?? 0) > 0;
  }

  /** Documents in processing since before `cutoff` (any org), oldest first. */
  findStuck(cutoff: Date, limit: number): Promise<DocumentEntity[]> {
    return this.repo
      .createQueryBuilder('d')
      .where(`d.status = 'processing'`)
      .andWhere('d.processing_started_at < :cutoff', { cutoff })
      .orderBy('d.processing_started_at', 'ASC')
      .limit(limit)
      .getMany();
  }

  /**
   * Records upload keys whose presigned URLs are closed but may still be written (S3) until they
   * expire; {@link dueClosedUploads} returns them once `deleteAfter` has passed.
   */
  async recordClosedUploads(keys: string[], deleteAfter: Date): Promise<void> {
    if (keys.length === 0) return;
    await this.dataSource.query(
      `INSERT INTO closed_uploads (storage_key, delete_after) SELECT unnest($1::text[]), $2
       ON CONFLICT (storage_key) DO UPDATE SET delete_after = GREATEST(closed_uploads.delete_after, EXCLUDED.delete_after)`,
      [keys, deleteAfter],
    );
  }

  /** Closed upload keys due for deletion at `now`, oldest first. */
  async dueClosedUploads(now: Date, limit: number): Promise<string[]> {
    const rows: Array<{ storage_key: string }> = await this.dataSource.query(
      `SELECT storage_key FROM closed_uploads WHERE delete_after <= $1 ORDER BY delete_after LIMIT $2`,
      [now, limit],
    );
    return rows.map((r) => r.storage_key);
  }

  /** Forgets a closed upload key once its object is deleted. */
  async forgetClosedUpload(key: string): Promise<void> {
    await this.dataSource.query(`DELETE FROM closed_uploads WHERE storage_key = $1`, [key]);
  }

  /**
   * Deletes documents' rows and writes one `document.deleted` webhook event and one
   * `document.deleted` audit event per row actually deleted (its data: the document as it was),
   * in one transaction.
   */
  async deleteMany(orgId: string, ids: string[], origin?: AuditOrigin): Promise<void> {
    if (ids.length === 0) return;
    await this.dataSource.transaction(async (m) => {
      const repo = m.getRepository(DocumentEntity);
      const docs = await repo.find({ where: { orgId, id: In(ids) }, lock: { mode: 'pessimistic_write' } });
      if (docs.length === 0) return;
      await repo.delete({ orgId, id: In(docs.map((d) => d.id)) });
      const at = new Date();
      await enqueueWebhookEvents(m, docs.map((d) => documentEvent('document.deleted', d, at)));
      for (const d of docs) {
        await recordAuditEvent(m, {
          orgId, action: 'document.deleted', resourceType: 'document', resourceId: d.id, origin, at,
          data: { before: { file_name: d.fileName, content_type: d.contentType, project_id: d.projectId, status: d.status } },
        });
      }
    });
  }
}

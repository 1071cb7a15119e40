import type { DocumentProgress } from '@kb/events';
import { AppError, AuditOrigin, enqueueWebhookEvent, enqueueWebhookEvents, recordAuditEvent } from '@kb/common';
import { DataSource, EntityManager, In, IsNull, Repository } from 'typeorm';
import { DocumentEntity, DocumentEventBuilders, DocumentStatus, INITIAL_PROGRESS, READY_PROGRESS } from './document.entity';

export interface DocumentFilter {
  projectId?: string;
  documentIds?: string[];
  status?: DocumentStatus;
  /** true: only documents not superseded by a newer version. */
  current?: boolean;
}

/** Result of {@link DocumentsRepository.startProcessing}. */
export type StartProcessingResult = 'started' | 'not_awaiting_upload' | 'replacement_conflict';

/**
 * The knowledge scope of one search, read from one snapshot (docs/retrieval.md "Document
 * versions: one switch point"): `documentIds` the handbooks read as their current versions (empty
 * when none were asked for), `excludeDocumentIds` the documents of the scope never to search.
 */
export interface SearchScopeRead {
  documentIds: string[];
  excludeDocumentIds: string[];
}

/** Longest chain of versions followed when reading a handbook as its current version. */
export const MAX_CHAIN_DEPTH = 1000;

/**
 * Data access for documents. Every read and write filters by the caller's org id; the only
 * cross-org query (`findOwners`) returns owners only, for the 403 rule of document deletion.
 */
export class DocumentsRepository {
  private readonly repo: Repository<DocumentEntity>;

  /** @param events the documents service's builders of the webhook events written with each state change. */
  constructor(
    private readonly dataSource: DataSource,
    private readonly events: DocumentEventBuilders,
  ) {
    this.repo = dataSource.getRepository(DocumentEntity);
  }

  /** Inserts a document (an upload slot) and its `document.created` audit event, in one transaction. */
  async insert(doc: DocumentEntity, origin?: AuditOrigin): Promise<void> {
    await this.dataSource.transaction(async (m) => {
      await m.getRepository(DocumentEntity).insert(doc);
      await this.recordCreated(m, doc, origin);
    });
  }

  /** The `document.created` audit event of an inserted document (a new version names what it replaces). */
  private async recordCreated(m: EntityManager, doc: DocumentEntity, origin?: AuditOrigin): Promise<void> {
    await recordAuditEvent(m, {
      orgId: doc.orgId,
      action: 'document.created',
      resourceType: 'document',
      resourceId: doc.id,
      origin,
      at: doc.createdAt,
      data: {
        after: {
          file_name: doc.fileName,
          content_type: doc.contentType,
          size_bytes: doc.declaredSizeBytes,
          project_id: doc.projectId,
          status: doc.status,
          version: doc.version,
          replaces: doc.replaces,
        },
      },
    });
  }

  /**
   * Inserts `doc` as the next version of `doc.replaces` (decisions.md "Document versions"): locks
   * the replaced row, checks it and sets `doc.version` to its version + 1, in one transaction.
   * @throws AppError NOT_FOUND when the replaced document is not one of the org's, or is in
   *   another project (`project_id` both null counts as the same); CONFLICT when it is already
   *   superseded, or another replacement of it is processing. Records `document.created` in the audit log in the
   *   same transaction, as {@link insert} does.
   */
  async insertVersion(doc: DocumentEntity & { replaces: string }, origin?: AuditOrigin): Promise<void> {
    await this.dataSource.transaction(async (m) => {
      const old = await this.lockReplaceable(m, doc.orgId, doc.replaces, doc.id);
      if (!old || old.projectId !== doc.projectId) {
        throw AppError.notFound(
          `Document ${doc.replaces} (replaces) not found in ${doc.projectId ? `project ${doc.projectId}` : 'the organization-level documents'}.`,
        );
      }
      doc.version = old.version + 1;
      await m.getRepository(DocumentEntity).insert(doc);
      await this.recordCreated(m, doc, origin);
    });
  }

  /**
   * Locks the document a new version replaces and checks that it can be replaced.
   * @returns the row, or null when the org has no such document.
   * @throws AppError CONFLICT when it is superseded, or a replacement other than `by` is processing.
   */
  private async lockReplaceable(m: EntityManager, orgId: string, id: string, by: string): Promise<DocumentEntity | null> {
    const old = await m.getRepository(DocumentEntity).findOne({ where: { orgId, id }, lock: { mode: 'pessimistic_write' } });
    if (!old) return null;
    if (old.supersededBy !== null) {
      throw AppError.conflict(`Document ${id} is already superseded by ${old.supersededBy}; replace the current version instead.`);
    }
    const [pending]: { id: string }[] = await m.query(
      `SELECT id FROM documents WHERE org_id = $1 AND replaces = $2 AND status = 'processing' AND id <> $3 LIMIT 1`,
      [orgId, id, by],
    );
    if (pending) throw AppError.conflict(`Document ${id} is already being replaced by ${pending.id}, which is still processing.`);
    return old;
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
    const rows: { id: string; org_id: string }[] = await this.dataSource.query(`SELECT id, org_id FROM documents WHERE id = ANY($1::uuid[])`, [ids]);
    return new Map(rows.map((r) => [r.id, r.org_id]));
  }

  /** Newest first. */
  async list(orgId: string, filter: DocumentFilter, limit: number, offset: number): Promise<{ items: DocumentEntity[]; total: number }> {
    const where: Record<string, unknown> = { orgId };
    if (filter.projectId) where.projectId = filter.projectId;
    if (filter.documentIds && filter.documentIds.length > 0) where.id = In(filter.documentIds);
    if (filter.status) where.status = filter.status;
    if (filter.current) where.supersededBy = IsNull();
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
   * (compare-and-set, so two concurrent process calls start it once). A new version
   * (`replaces` set) starts only while the document it replaces is not superseded and has no
   * other replacement processing (checked under that document's row lock, so two replacements
   * of one document never process at once).
   * @returns 'started' when this call made the transition, 'not_awaiting_upload' when another did
   *   (or the status is another), 'replacement_conflict' when the replaced document cannot be replaced.
   * The transition records `document.process_requested` in the audit log in the same transaction.
   */
  async startProcessing(
    orgId: string,
    id: string,
    sizeBytes: number,
    at: Date,
    replaces: string | null = null,
    origin?: AuditOrigin,
  ): Promise<StartProcessingResult> {
    return this.dataSource.transaction(async (m) => {
      if (replaces !== null) {
        try {
          await this.lockReplaceable(m, orgId, replaces, id);
        } catch (error) {
          if (error instanceof AppError) return 'replacement_conflict';
          throw error;
        }
      }
      const result = await m.getRepository(DocumentEntity).update(
        { orgId, id, status: 'awaiting_upload' },
        // Queued for ingestion: shown as the first stage until ingestion reports its own progress
        // (progress_at stays null so that ingestion's first event applies whatever its clock says).
        { status: 'processing', sizeBytes, processingStartedAt: at, updatedAt: at, errorMessage: null, progress: INITIAL_PROGRESS, progressAt: null },
      );
      if ((result.affected ?? 0) === 0) return 'not_awaiting_upload';
      await recordAuditEvent(m, {
        orgId,
        action: 'document.process_requested',
        resourceType: 'document',
        resourceId: id,
        origin,
        at,
        data: { size_bytes: sizeBytes, before: { status: 'awaiting_upload' }, after: { status: 'processing' } },
      });
      return 'started';
    });
  }

  /**
   * Undoes startProcessing when the processing request could not be published; the reversal is
   * recorded as `document.process_reverted` (events are never removed), in the same transaction.
   */
  async revertToAwaitingUpload(orgId: string, id: string, origin?: AuditOrigin): Promise<void> {
    await this.dataSource.transaction(async (m) => {
      const at = new Date();
      const result = await m
        .getRepository(DocumentEntity)
        .update(
          { orgId, id, status: 'processing' },
          { status: 'awaiting_upload', sizeBytes: null, processingStartedAt: null, updatedAt: at, progress: null, progressAt: null },
        );
      if ((result.affected ?? 0) === 0) return;
      await recordAuditEvent(m, {
        orgId,
        action: 'document.process_reverted',
        resourceType: 'document',
        resourceId: id,
        origin,
        at,
        data: { before: { status: 'processing' }, after: { status: 'awaiting_upload' } },
      });
    });
  }

  /**
   * Applies a processing outcome if the transition is allowed from the current status
   * (processing → ready|completed|failed, ready → completed|failed). Idempotent under redelivery.
   * An applied transition writes its webhook event (`document.<status>`) to the outbox in the
   * same transaction. When a new version first becomes searchable (`ready`, or `completed`
   * straight from `processing`), the same transaction sets `superseded_by` on the document it
   * replaces: the one commit point where the knowledge scope switches versions (docs/retrieval.md
   * "Document versions: one switch point"). A failed new version changes nothing on the old one.
   * @returns 'applied', 'ignored' (stale or repeated event) or 'missing' (document deleted).
   */
  async applyOutcome(
    orgId: string,
    id: string,
    outcome: {
      status: 'ready' | 'completed' | 'failed';
      chunkCount: number | null;
      pageCount: number | null;
      /** Page sizes in points (PDFs); absent/null keeps none. */
      pageSizes?: { page: number; width: number; height: number }[] | null;
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
          pageSizes: outcome.status === 'failed' ? null : (outcome.pageSizes ?? null),
          errorMessage: outcome.status === 'failed' ? outcome.errorMessage : null,
          // Progress is shown while processing or ready, and cleared at completed and failed.
          progress: outcome.status === 'ready' ? (outcome.progress ?? READY_PROGRESS) : null,
          progressAt: at,
          updatedAt: at,
        },
      );
      if ((result.affected ?? 0) > 0) {
        const doc = (await repo.findOne({ where: { orgId, id } }))!;
        if (outcome.status !== 'failed' && current?.status === 'processing' && doc.replaces !== null) {
          await m.query(`UPDATE documents SET superseded_by = $3, updated_at = $4 WHERE org_id = $1 AND id = $2 AND superseded_by IS NULL`, [
            orgId,
            doc.replaces,
            id,
            at,
          ]);
        }
        // `completed` straight from `processing` (its `ready` status event was handled after it,
        // and ignored): the document became searchable all the same, so `document.ready` still
        // goes out, first.
        if (outcome.status === 'completed' && current?.status === 'processing') await enqueueWebhookEvent(m, this.events.document('document.ready', doc, at));
        await enqueueWebhookEvent(m, this.events.document(`document.${outcome.status}`, doc, at));
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
   * The knowledge scope of one search, read in ONE statement (so from one snapshot: a version
   * switch committed by {@link applyOutcome} is seen whole or not at all).
   * - With `documentIds` (handbooks): each is followed along `superseded_by` to the current
   *   version of its chain (at most {@link MAX_CHAIN_DEPTH} steps), kept when that version is
   *   ready or completed; unknown and other orgs' ids are dropped; request order, no duplicates.
   *   `excludeDocumentIds` is then empty.
   * - Without: `excludeDocumentIds` lists the documents of the scope (the project's plus the
   *   org-level ones; the whole org without `projectId`) that are superseded, processing or
   *   failed: those whose chunks may be indexed but must not be searched.
   */
  async readSearchScope(orgId: string, projectId: string | null, documentIds: string[]): Promise<SearchScopeRead> {
    if (documentIds.length > 0) {
      const rows: { start_id: string; id: string; status: DocumentStatus }[] = await this.dataSource.query(
        `WITH RECURSIVE chain(start_id, id, superseded_by, status, depth) AS (
           SELECT d.id, d.id, d.superseded_by, d.status, 0 FROM documents d WHERE d.org_id = $1 AND d.id = ANY($2::uuid[])
           UNION ALL
           SELECT c.start_id, n.id, n.superseded_by, n.status, c.depth + 1
             FROM chain c JOIN documents n ON n.org_id = $1 AND n.id = c.superseded_by
            WHERE c.depth < $3
         )
         SELECT start_id, id, status FROM chain WHERE superseded_by IS NULL`,
        [orgId, documentIds, MAX_CHAIN_DEPTH],
      );
      const head = new Map(rows.filter((r) => r.status === 'ready' || r.status === 'completed').map((r) => [r.start_id, r.id]));
      const resolved = documentIds.map((id) => head.get(id)).filter((id): id is string => id !== undefined);
      return { documentIds: [...new Set(resolved)], excludeDocumentIds: [] };
    }
    const rows: { id: string }[] = await this.dataSource.query(
      `SELECT id FROM documents
        WHERE org_id = $1 AND ($2::uuid IS NULL OR project_id = $2 OR project_id IS NULL)
          AND (superseded_by IS NOT NULL OR status IN ('processing', 'failed'))`,
      [orgId, projectId],
    );
    return { documentIds: [], excludeDocumentIds: rows.map((r) => r.id) };
  }

  /**
   * Deletes documents' rows and writes one `document.deleted` webhook event and one
   * `document.deleted` audit event per row actually deleted (its data: the document as it was),
   * in one transaction. Version chains are re-linked
   * around each deleted document (decisions.md "Document versions", docs/retrieval.md): its
   * predecessor's `superseded_by` becomes the deleted one's (null when the current version is
   * deleted, so the previous version is current again) and its successors' `replaces` becomes the
   * deleted one's `replaces`.
   */
  async deleteMany(orgId: string, ids: string[], origin?: AuditOrigin): Promise<void> {
    if (ids.length === 0) return;
    await this.dataSource.transaction(async (m) => {
      const repo = m.getRepository(DocumentEntity);
      const docs = await repo.find({ where: { orgId, id: In(ids) }, lock: { mode: 'pessimistic_write' } });
      if (docs.length === 0) return;
      for (const d of docs) {
        // Re-read: an earlier deletion of this call may have re-linked this row.
        const [row]: { replaces: string | null; superseded_by: string | null }[] = await m.query(
          `SELECT replaces, superseded_by FROM documents WHERE org_id = $1 AND id = $2`,
          [orgId, d.id],
        );
        await m.query(`UPDATE documents SET superseded_by = $3 WHERE org_id = $1 AND superseded_by = $2`, [orgId, d.id, row.superseded_by]);
        await m.query(`UPDATE documents SET replaces = $3 WHERE org_id = $1 AND replaces = $2`, [orgId, d.id, row.replaces]);
        await m.query(`DELETE FROM documents WHERE org_id = $1 AND id = $2`, [orgId, d.id]);
      }
      const at = new Date();
      await enqueueWebhookEvents(
        m,
        docs.map((d) => this.events.document('document.deleted', d, at)),
      );
      for (const d of docs) {
        await recordAuditEvent(m, {
          orgId,
          action: 'document.deleted',
          resourceType: 'document',
          resourceId: d.id,
          origin,
          at,
          data: { before: { file_name: d.fileName, content_type: d.contentType, project_id: d.projectId, status: d.status } },
        });
      }
    });
  }
}

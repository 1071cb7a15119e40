import { enqueueWebhookEvent, rowsOf, AuditOrigin, recordAuditEvent } from '@kb/common';
import type { BatchStatus } from '@kb/events';
import type { agentV1 } from '@kb/proto';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import type { BatchEventBuilders, BatchRow, QuestionRow } from './batch-rows';

/** The error of each question left unanswered when its batch fails as a whole (BatchesRepository.markFailed). */
export const BATCH_FAILED_QUESTION_ERROR = 'The batch could not be queued, so this question was not answered.';

/** The outcome of one question, to be recorded. */
export interface QuestionOutcome {
  status: 'completed' | 'failed';
  answer: string | null;
  citations: agentV1.Citation[];
  agent: string | null;
  error: string | null;
  confidence: number | null;
}

/**
 * Data access for batch queries (schema `agent`: `batches`, `batch_questions`, the webhook outbox).
 * Reads by id filter by the caller's org id; the work-item statements (by batch id) run for a batch
 * already read with its org. Every value is a bound parameter (`$n`), LIMIT and OFFSET included.
 *
 * Counters: recording a question's outcome and bumping the batch's counters happen in one
 * transaction guarded by the question still being `pending`, so a redelivered work item is never
 * counted twice; the transition to `completed` or `failed` writes its webhook event to the outbox
 * in the same transaction.
 */
export class BatchesRepository {
  /** @param events the agent service's builders of the webhook events written with each state change. */
  constructor(
    private readonly db: DataSource,
    private readonly events: BatchEventBuilders,
  ) {}

  /**
   * Inserts a pending batch and its questions (`idx` 0… in the given order) and its `batch.created`
   * audit event, in one transaction. `queue`, when given, is called inside that transaction with the
   * row: the batch commits only when it resolves, so a batch whose questions cannot be queued (NATS
   * down) is never created. The transaction holds the batch's advisory lock, which
   * {@link awaitCreation} waits for: a worker handed a question before the commit waits for it.
   * @returns the row as inserted (not read back: a worker may already be changing it).
   * @throws whatever `queue` throws (nothing is inserted then).
   */
  async create(
    orgId: string,
    input: { name: string | null; projectId: string | null; chatType: string | null; safetyAssistantEnabled: boolean; questions: string[] },
    origin?: AuditOrigin,
    queue?: (row: BatchRow) => Promise<void>,
  ): Promise<BatchRow> {
    const now = new Date();
    const row: BatchRow = {
      id: randomUUID(),
      org_id: orgId,
      name: input.name,
      project_id: input.projectId,
      chat_type: input.chatType,
      safety_assistant_enabled: input.safetyAssistantEnabled,
      status: 'pending',
      total_questions: input.questions.length,
      processed_questions: 0,
      failed_questions: 0,
      created_at: now,
      updated_at: now,
    };
    await this.db.transaction(async (m) => {
      await m.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [row.id]);
      await m.query(
        `INSERT INTO batches (id, org_id, name, project_id, chat_type, safety_assistant_enabled, status, total_questions, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7, $8, $8)`,
        [row.id, orgId, row.name, row.project_id, row.chat_type, row.safety_assistant_enabled, row.total_questions, row.created_at],
      );
      await m.query(
        `INSERT INTO batch_questions (batch_id, idx, question, status, updated_at)
         SELECT $1, q.ord - 1, q.question, 'pending', $2 FROM unnest($3::text[]) WITH ORDINALITY AS q(question, ord)`,
        [row.id, row.created_at, input.questions],
      );
      await recordAuditEvent(m, {
        orgId,
        action: 'batch.created',
        resourceType: 'batch',
        resourceId: row.id,
        origin,
        at: now,
        data: { after: { name: row.name, project_id: row.project_id, chat_type: row.chat_type, total_questions: row.total_questions, status: row.status } },
      });
      if (queue) await queue(row);
    });
    return row;
  }

  /**
   * Waits until the transaction creating batch `id` (if one is still open) has committed or rolled
   * back: a worker can be handed a question while {@link create} is still queueing the others.
   * Returns at once otherwise.
   */
  async awaitCreation(id: string): Promise<void> {
    // Autocommit: the shared lock is taken once the creator's exclusive one is released, and released at once.
    await this.db.query(`SELECT pg_advisory_xact_lock_shared(hashtextextended($1, 0))`, [id]);
  }

  /** Batches of the org, newest first, optionally of one project and/or in one status. */
  async list(
    orgId: string,
    filter: { projectId: string | null; status: BatchStatus | null },
    limit: number,
    offset: number,
  ): Promise<{ rows: BatchRow[]; total: number }> {
    const where = `org_id = $1 AND ($2::uuid IS NULL OR project_id = $2::uuid) AND ($3::text IS NULL OR status = $3::text)`;
    const [{ total }] = await this.db.query<{ total: number }[]>(`SELECT count(*)::int AS total FROM batches WHERE ${where}`, [
      orgId,
      filter.projectId,
      filter.status,
    ]);
    const rows: BatchRow[] = await this.db.query(`SELECT * FROM batches WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT $4 OFFSET $5`, [
      orgId,
      filter.projectId,
      filter.status,
      limit,
      offset,
    ]);
    return { rows, total };
  }

  /** The batch, or null when it does not exist or is another org's. */
  async find(orgId: string, id: string): Promise<BatchRow | null> {
    const [row]: BatchRow[] = await this.db.query(`SELECT * FROM batches WHERE id = $1 AND org_id = $2`, [id, orgId]);
    return row ?? null;
  }

  /** Every question of a batch (read with its org first), in order. */
  listQuestions(batchId: string): Promise<QuestionRow[]> {
    return this.db.query(`SELECT idx, question, status, answer, citations, agent, error, confidence FROM batch_questions WHERE batch_id = $1 ORDER BY idx`, [
      batchId,
    ]);
  }

  /** One question of a batch (read with its org first), or null. */
  async findQuestion(batchId: string, idx: number): Promise<Pick<QuestionRow, 'idx' | 'question' | 'status'> | null> {
    const [row] = await this.db.query<Pick<QuestionRow, 'idx' | 'question' | 'status'>[]>(
      `SELECT idx, question, status FROM batch_questions WHERE batch_id = $1 AND idx = $2`,
      [batchId, idx],
    );
    return row ?? null;
  }

  /** A pending batch becomes `processing` (its first question is being answered); otherwise nothing changes. */
  async markProcessing(batchId: string): Promise<void> {
    await this.db.query(`UPDATE batches SET status = 'processing', updated_at = now() WHERE id = $1 AND status = 'pending'`, [batchId]);
  }

  /**
   * Records a question's outcome and counts it, if the question is still pending (compare-and-set:
   * a redelivered work item changes nothing). The batch becomes `completed` with its last question,
   * and `batch.completed` goes to the outbox in the same transaction.
   */
  async recordOutcome(batchId: string, idx: number, outcome: QuestionOutcome): Promise<void> {
    await this.db.transaction(async (m) => {
      const updated = rowsOf(
        await m.query(
          `UPDATE batch_questions SET status = $3, answer = $4, citations = $5::jsonb, agent = $6, error = $7, confidence = $8, updated_at = now()
           WHERE batch_id = $1 AND idx = $2 AND status = 'pending' RETURNING idx`,
          [batchId, idx, outcome.status, outcome.answer, JSON.stringify(outcome.citations), outcome.agent, outcome.error, outcome.confidence],
        ),
      );
      if (updated.length === 0) return;
      const [batch] = rowsOf<BatchRow>(
        await m.query(
          `UPDATE batches SET processed_questions = processed_questions + 1,
             failed_questions = failed_questions + $2,
             status = CASE WHEN processed_questions + 1 >= total_questions THEN 'completed' ELSE 'processing' END,
             updated_at = now()
           WHERE id = $1 RETURNING *`,
          [batchId, outcome.status === 'failed' ? 1 : 0],
        ),
      );
      // The last question finished (exactly once, under the question row's compare-and-set above).
      if (batch?.status === 'completed') await enqueueWebhookEvent(m, this.events.batch('batch.completed', batch));
    });
  }

  /**
   * Marks a batch `failed` (its questions could not be queued) and writes `batch.failed` to the
   * webhook outbox in the same transaction. `failed` is final: the questions still pending fail
   * with it (error {@link BATCH_FAILED_QUESTION_ERROR}, counted in `processed_questions` and
   * `failed_questions`), so a work item queued before the failure finds nothing left to answer and
   * the batch never turns `completed` afterwards. Idempotent: a batch already failed or completed
   * changes nothing.
   * @returns whether this call failed it.
   */
  async markFailed(id: string): Promise<boolean> {
    return this.db.transaction(async (m) => {
      // Question rows first, then the batch row: the lock order of recordOutcome, so the two never deadlock.
      const abandoned = rowsOf(
        await m.query(
          `UPDATE batch_questions SET status = 'failed', error = $2, updated_at = now()
           WHERE batch_id = $1 AND status = 'pending' AND EXISTS (SELECT 1 FROM batches WHERE id = $1 AND status IN ('pending', 'processing'))
           RETURNING idx`,
          [id, BATCH_FAILED_QUESTION_ERROR],
        ),
      ).length;
      const [failed] = rowsOf<BatchRow>(
        await m.query(
          `UPDATE batches SET status = 'failed', processed_questions = processed_questions + $2, failed_questions = failed_questions + $2, updated_at = now()
           WHERE id = $1 AND status IN ('pending', 'processing') RETURNING *`,
          [id, abandoned],
        ),
      );
      if (!failed) return false;
      await enqueueWebhookEvent(m, this.events.batch('batch.failed', failed));
      return true;
    });
  }
}

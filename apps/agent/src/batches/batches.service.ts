import { AppError, CallContext, enqueueWebhookEvent, ErrorCode, Logger, OutboxEventInput, runWithContext, MAX_BATCH_QUESTIONS, QUESTION_MAX_CHARS, pageWindow } from '@kb/common';
import { BatchQuestionEvent, BatchQuestionStatus, batchQuestionStatus, BatchStatus, batchStatus, presentBatch, WebhookEventType } from '@kb/events';
import { citationToProto } from '@kb/knowledge';
import { isAbortError, ModelProviderError } from '@kb/models';
import { agentV1 } from '@kb/proto';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { AnswerService } from '../answering/answer.service';

export type { BatchStatus };

interface BatchRow {
  id: string;
  org_id: string;
  name: string | null;
  project_id: string | null;
  chat_type: string | null;
  safety_assistant_enabled: boolean;
  status: BatchStatus;
  total_questions: number;
  processed_questions: number;
  failed_questions: number;
  created_at: Date;
  updated_at: Date;
}

interface QuestionRow {
  idx: number;
  question: string;
  status: BatchQuestionStatus;
  answer: string | null;
  citations: agentV1.Citation[];
  agent: string | null;
  error: string | null;
  confidence: number | null;
}

/** Codes of answering errors worth retrying (the item is redelivered); anything else fails the question. */
const TRANSIENT = new Set<string>([ErrorCode.SERVICE_UNAVAILABLE, ErrorCode.TIMEOUT, ErrorCode.INTERNAL_ERROR]);

/**
 * Batch queries (decisions.md "Batches"): questions answered in the background by JetStream
 * workers. Every row is scoped by org id in SQL.
 *
 * Counters: `processed_questions` = questions finished (answered or failed), `failed_questions`
 * = those that failed; the batch is `completed` when every question is finished. Recording a
 * question's outcome and bumping the counters happen in one transaction guarded by the question
 * still being `pending`, so a redelivered work item is never counted twice.
 */
export class BatchesService {
  constructor(
    private readonly deps: {
      db: DataSource;
      answers: AnswerService;
      publish: (event: BatchQuestionEvent, msgId: string) => Promise<void>;
      logger: Logger;
    },
  ) {}

  /**
   * Creates a batch with status `pending` and queues one work item per question.
   * @throws AppError VALIDATION_ERROR (bad chat_type / project without id), AGENT_NOT_ENABLED
   *   (safety not enabled), NOT_FOUND (project), SERVICE_UNAVAILABLE when the queue is down (the
   *   batch is then marked `failed`).
   */
  async create(ctx: CallContext, req: agentV1.CreateBatchRequest): Promise<agentV1.Batch> {
    if (req.questions.length < 1 || req.questions.length > MAX_BATCH_QUESTIONS) throw AppError.validation(`questions must have 1 to ${MAX_BATCH_QUESTIONS} items.`);
    if (req.questions.some((q) => !q.trim() || q.length > QUESTION_MAX_CHARS)) throw AppError.validation(`Each question must be 1 to ${QUESTION_MAX_CHARS} characters.`);
    if (req.chatType === 'safety' && !req.safetyAssistantEnabled) {
      throw new AppError(ErrorCode.AGENT_NOT_ENABLED, 'The Safety Assistant is not enabled for your organization. Ask your administrator to enable it.');
    }
    if (req.chatType && !['general', 'project', 'safety'].includes(req.chatType)) throw AppError.validation('chat_type must be one of general, project, safety.');
    if (req.chatType === 'project' && !req.projectId) throw AppError.validation('project_id is required when chat_type is project.');
    if (req.projectId) await this.deps.answers.requireProject(req.projectId);
    const id = randomUUID();
    const now = new Date();
    await this.deps.db.transaction(async (m) => {
      await m.query(
        `INSERT INTO batches (id, org_id, name, project_id, chat_type, safety_assistant_enabled, status, total_questions, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7, $8, $8)`,
        [id, ctx.orgId, req.name ?? null, req.projectId ?? null, req.chatType ?? null, req.safetyAssistantEnabled, req.questions.length, now],
      );
      // Placeholders: $1 batch id, $2 time, then one (idx, question) pair per question.
      const params: unknown[] = [id, now, ...req.questions.flatMap((q, i) => [i, q])];
      const fixed = req.questions.map((_, i) => `($1, $${3 + 2 * i}, $${4 + 2 * i}, 'pending', $2)`);
      await m.query(`INSERT INTO batch_questions (batch_id, idx, question, status, updated_at) VALUES ${fixed.join(', ')}`, params);
    });
    try {
      for (let i = 0; i < req.questions.length; i++) {
        await this.deps.publish({ batchId: id, orgId: ctx.orgId, index: i }, `${id}:${i}`);
      }
    } catch (err) {
      this.deps.logger.error({ err, batch_id: id }, 'could not queue batch questions');
      await markBatchFailed(this.deps.db, id);
      throw new AppError(ErrorCode.SERVICE_UNAVAILABLE, 'The batch could not be queued. Retry shortly.');
    }
    // Built from what was inserted: a worker may already have picked the first question up.
    return toBatch(
      {
        id,
        org_id: ctx.orgId,
        name: req.name ?? null,
        project_id: req.projectId ?? null,
        chat_type: req.chatType ?? null,
        safety_assistant_enabled: req.safetyAssistantEnabled,
        status: 'pending',
        total_questions: req.questions.length,
        processed_questions: 0,
        failed_questions: 0,
        created_at: now,
        updated_at: now,
      },
      [],
    );
  }

  /** Summaries newest first, filtered by project and status. */
  async list(ctx: CallContext, req: agentV1.ListBatchesRequest): Promise<agentV1.ListBatchesResponse> {
    const status = req.status === undefined ? undefined : batchStatus.fromProto(req.status);
    const where = ['org_id = $1'];
    const params: unknown[] = [ctx.orgId];
    if (req.projectId) {
      params.push(req.projectId);
      where.push(`project_id = $${params.length}`);
    }
    if (status) {
      params.push(status);
      where.push(`status = $${params.length}`);
    }
    const { limit, offset } = pageWindow(req);
    const [{ total }] = await this.deps.db.query(`SELECT count(*)::int AS total FROM batches WHERE ${where.join(' AND ')}`, params);
    const rows: BatchRow[] = await this.deps.db.query(
      `SELECT * FROM batches WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT ${limit} OFFSET ${offset}`,
      params,
    );
    return { batches: rows.map((r) => toBatch(r, [])), total };
  }

  /**
   * One batch of the caller's org; with `withResults`, every question in order.
   * @returns null when `throwIfMissing` is false and the batch does not exist.
   * @throws AppError NOT_FOUND when missing or of another org (unless `throwIfMissing` is false).
   */
  async get(ctx: CallContext, id: string, withResults = true, throwIfMissing = true): Promise<agentV1.Batch | null> {
    const [row]: BatchRow[] = await this.deps.db.query(`SELECT * FROM batches WHERE id = $1 AND org_id = $2`, [id, ctx.orgId]);
    if (!row) {
      if (throwIfMissing) throw AppError.notFound('Batch not found.');
      return null;
    }
    const questions: QuestionRow[] = withResults
      ? await this.deps.db.query(`SELECT idx, question, status, answer, citations, agent, error, confidence FROM batch_questions WHERE batch_id = $1 ORDER BY idx`, [id])
      : [];
    return toBatch(row, questions);
  }

  /**
   * Work-item handler: answers one question and records the outcome. Idempotent: a question that
   * is no longer pending is skipped. Transient failures throw (the item is redelivered) until the
   * last attempt, which records the question as failed; other failures are recorded at once.
   * `delivery.attempt` (1-based) is logged with the start of the work ("answering batch question").
   */
  async processQuestion(event: BatchQuestionEvent, delivery: { isLastAttempt: boolean; attempt?: number }): Promise<void> {
    // Outgoing calls (retrieval, documents) take the org from the request context.
    return runWithContext({ requestId: `batch:${event.batchId}:${event.index}`, orgId: event.orgId }, () => this.processInContext(event, delivery));
  }

  private async processInContext(event: BatchQuestionEvent, delivery: { isLastAttempt: boolean; attempt?: number }): Promise<void> {
    const ctx: CallContext = { orgId: event.orgId, requestId: `${event.batchId}:${event.index}` };
    const [batch]: BatchRow[] = await this.deps.db.query(`SELECT * FROM batches WHERE id = $1 AND org_id = $2`, [event.batchId, event.orgId]);
    if (!batch) return;
    const [item]: QuestionRow[] = await this.deps.db.query(`SELECT idx, question, status FROM batch_questions WHERE batch_id = $1 AND idx = $2`, [
      event.batchId,
      event.index,
    ]);
    if (!item || item.status !== 'pending') return;
    this.deps.logger.info({ batch_id: batch.id, index: item.idx, attempt: delivery.attempt ?? 1 }, 'answering batch question');
    await this.deps.db.query(`UPDATE batches SET status = 'processing', updated_at = now() WHERE id = $1 AND status = 'pending'`, [batch.id]);
    try {
      const result = await this.deps.answers.answer(ctx, {
        messages: [{ role: 'user', content: item.question }],
        chatType: batch.chat_type ?? undefined,
        projectId: batch.project_id ?? undefined,
        documentIds: [],
        topK: 8,
        safetyAssistantEnabled: batch.safety_assistant_enabled,
        source: 'agent.batch',
      });
      await this.record(batch.id, item.idx, {
        status: 'completed',
        answer: result.answer,
        // Stored in their wire form (the JSON older rows hold too), returned as is by GetBatch.
        citations: result.citations.map(citationToProto),
        agent: result.agent,
        error: null,
        confidence: result.confidence,
      });
    } catch (err) {
      const transient =
        (err instanceof AppError && TRANSIENT.has(err.code)) || (err instanceof ModelProviderError && err.retryable) || isAbortError(err) || !(err instanceof Error);
      if (transient && !delivery.isLastAttempt) throw err;
      const message =
        err instanceof AppError
          ? err.message
          : err instanceof ModelProviderError
            ? 'The chat model could not answer this question.'
            : 'This question could not be answered because of an internal error.';
      this.deps.logger.warn({ err, batch_id: batch.id, index: item.idx }, 'batch question failed');
      await this.record(batch.id, item.idx, { status: 'failed', answer: null, citations: [], agent: null, error: message, confidence: null });
    }
  }

  private async record(
    batchId: string,
    idx: number,
    outcome: {
      status: 'completed' | 'failed';
      answer: string | null;
      citations: agentV1.Citation[];
      agent: string | null;
      error: string | null;
      confidence: number | null;
    },
  ): Promise<void> {
    await this.deps.db.transaction(async (m) => {
      const updated: unknown[] = await m.query(
        `UPDATE batch_questions SET status = $3, answer = $4, citations = $5::jsonb, agent = $6, error = $7, confidence = $8, updated_at = now()
         WHERE batch_id = $1 AND idx = $2 AND status = 'pending' RETURNING idx`,
        [batchId, idx, outcome.status, outcome.answer, JSON.stringify(outcome.citations), outcome.agent, outcome.error, outcome.confidence],
      );
      // pg returns [rows, count] for UPDATE … RETURNING through TypeORM.
      const rows = Array.isArray(updated[0]) ? (updated[0] as unknown[]) : updated;
      if (rows.length === 0) return;
      const [batch]: BatchRow[] = rowsOf(
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
      if (batch?.status === 'completed') await enqueueWebhookEvent(m, batchEvent('batch.completed', batch));
    });
  }
}

function toBatch(r: BatchRow, questions: QuestionRow[]): agentV1.Batch {
  return {
    id: r.id,
    name: r.name ?? undefined,
    orgId: r.org_id,
    projectId: r.project_id ?? undefined,
    chatType: r.chat_type ?? undefined,
    status: batchStatus.toProto(r.status),
    totalQuestions: r.total_questions,
    processedQuestions: r.processed_questions,
    failedQuestions: r.failed_questions,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
    results: questions.map((q) => ({
      index: q.idx,
      question: q.question,
      status: batchQuestionStatus.toProto(q.status),
      answer: q.answer ?? undefined,
      citations: q.citations ?? [],
      error: q.error ?? undefined,
      agent: q.agent ?? undefined,
      confidence: q.confidence ?? undefined,
    })),
  };
}

/** Rows of a statement: TypeORM answers UPDATE … RETURNING with `[rows, affectedCount]`. */
function rowsOf<T>(result: unknown): T[] {
  if (Array.isArray(result) && result.length === 2 && Array.isArray(result[0]) && typeof result[1] === 'number') return result[0] as T[];
  return (result as T[]) ?? [];
}

/** The webhook event of a batch's state change, `data` being the batch as GET shows it (without results). */
export function batchEvent(type: Extract<WebhookEventType, `batch.${string}`>, r: BatchRow): OutboxEventInput {
  const at = new Date(r.updated_at);
  return { type, orgId: r.org_id, resourceKey: `batch:${r.id}`, data: presentBatch(toBatch(r, [])), at };
}

/**
 * Marks a batch `failed` (its questions could not be queued) and writes `batch.failed` to the
 * webhook outbox in the same transaction. Idempotent: an already failed batch changes nothing.
 * @returns whether this call failed it.
 */
export async function markBatchFailed(db: DataSource, id: string): Promise<boolean> {
  return db.transaction(async (m) => {
    const [failed]: BatchRow[] = rowsOf(await m.query(`UPDATE batches SET status = 'failed', updated_at = now() WHERE id = $1 AND status <> 'failed' RETURNING *`, [id]));
    if (failed) await enqueueWebhookEvent(m, batchEvent('batch.failed', failed));
    return Boolean(failed);
  });
}

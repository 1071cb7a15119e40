import { AppError, CallContext, charCount, ErrorCode, Logger, runWithContext, MAX_BATCH_QUESTIONS, QUESTION_MAX_CHARS, pageWindow } from '@kb/common';
import { BatchQuestionEvent, BatchStatus } from '@kb/events';
import { citationToProto } from '@kb/knowledge';
import { isAbortError, ModelProviderError } from '@kb/models';
import { AnswerService } from '../answering/answer.service';
import { BatchesRepository } from './batches.repository';
import type { BatchRow, QuestionRow } from './batch-rows';

/** A batch to create (the use case's input; the gRPC controller maps CreateBatchRequest to it). */
export interface NewBatch {
  name?: string;
  projectId?: string;
  chatType?: string;
  /** Whether the caller's organization has the Safety Assistant (from the gateway). */
  safetyAssistantEnabled: boolean;
  questions: string[];
}

/** Filter and page of a batch listing (`limit`/`offset` checked by `pageWindow`). */
export interface BatchListQuery {
  projectId?: string;
  status?: BatchStatus;
  limit?: number;
  offset?: number;
}

/** Codes of answering errors worth retrying (the item is redelivered); anything else fails the question. */
const TRANSIENT = new Set<string>([ErrorCode.SERVICE_UNAVAILABLE, ErrorCode.TIMEOUT, ErrorCode.INTERNAL_ERROR]);

/**
 * Batch queries (decisions.md "Batches"): questions answered in the background by JetStream
 * workers. Rows are read and written through {@link BatchesRepository}, scoped by org id.
 *
 * Counters: `processed_questions` = questions finished (answered or failed), `failed_questions`
 * = those that failed; the batch is `completed` when every question is finished. A redelivered
 * work item is never counted twice (BatchesRepository.recordOutcome).
 */
export class BatchesService {
  constructor(
    private readonly deps: {
      repository: BatchesRepository;
      answers: AnswerService;
      publish: (event: BatchQuestionEvent, msgId: string) => Promise<void>;
      logger: Logger;
    },
  ) {}

  /**
   * Creates a batch with status `pending` and queues one work item per question.
   * @throws AppError VALIDATION_ERROR (bad chat_type / project without id), AGENT_NOT_ENABLED
   *   (safety not enabled), NOT_FOUND (project), SERVICE_UNAVAILABLE when the queue is down (the
   *   batch is then not created: its questions are queued before its transaction commits).
   */
  async create(ctx: CallContext, req: NewBatch): Promise<BatchRow> {
    if (req.questions.length < 1 || req.questions.length > MAX_BATCH_QUESTIONS)
      throw AppError.validation(`questions must have 1 to ${MAX_BATCH_QUESTIONS} items.`);
    if (req.questions.some((q) => !q.trim() || charCount(q) > QUESTION_MAX_CHARS))
      throw AppError.validation(`Each question must be 1 to ${QUESTION_MAX_CHARS} characters.`);
    if (req.chatType === 'safety' && !req.safetyAssistantEnabled) {
      throw new AppError(ErrorCode.AGENT_NOT_ENABLED, 'The Safety Assistant is not enabled for your organization. Ask your administrator to enable it.');
    }
    if (req.chatType && !['general', 'project', 'safety'].includes(req.chatType))
      throw AppError.validation('chat_type must be one of general, project, safety.');
    if (req.chatType === 'project' && !req.projectId) throw AppError.validation('project_id is required when chat_type is project.');
    if (req.projectId) await this.deps.answers.requireProject(ctx, req.projectId);
    let queueError: unknown;
    let batch: BatchRow;
    try {
      batch = await this.deps.repository.create(
        ctx.orgId,
        {
          name: req.name ?? null,
          projectId: req.projectId ?? null,
          chatType: req.chatType ?? null,
          safetyAssistantEnabled: req.safetyAssistantEnabled,
          questions: req.questions,
        },
        ctx,
        async (row) => {
          try {
            for (let i = 0; i < req.questions.length; i++) await this.deps.publish({ batchId: row.id, orgId: ctx.orgId, index: i }, `${row.id}:${i}`);
          } catch (err) {
            queueError = err;
            throw err;
          }
        },
      );
    } catch (err) {
      if (queueError === undefined || err !== queueError) throw err;
      this.deps.logger.error({ err }, 'could not queue batch questions; the batch was not created');
      throw new AppError(ErrorCode.SERVICE_UNAVAILABLE, 'The batch could not be queued and was not created. Retry shortly.');
    }
    // What was inserted: a worker may already have picked the first question up.
    return batch;
  }

  /** Summaries newest first, filtered by project and status. */
  async list(ctx: CallContext, query: BatchListQuery): Promise<{ rows: BatchRow[]; total: number }> {
    const { limit, offset } = pageWindow(query);
    return this.deps.repository.list(ctx.orgId, { projectId: query.projectId || null, status: query.status ?? null }, limit, offset);
  }

  /**
   * One batch of the caller's org; with `withResults`, every question in order.
   * @returns null when `throwIfMissing` is false and the batch does not exist.
   * @throws AppError NOT_FOUND when missing or of another org (unless `throwIfMissing` is false).
   */
  async get(ctx: CallContext, id: string, withResults = true, throwIfMissing = true): Promise<{ batch: BatchRow; questions: QuestionRow[] } | null> {
    const row = await this.deps.repository.find(ctx.orgId, id);
    if (!row) {
      if (throwIfMissing) throw AppError.notFound('Batch not found.');
      return null;
    }
    const questions = withResults ? await this.deps.repository.listQuestions(id) : [];
    return { batch: row, questions };
  }

  /**
   * Work-item handler: answers one question and records the outcome. Idempotent: a question that
   * is no longer pending is skipped. Transient failures throw (the item is redelivered) until the
   * last attempt, which records the question as failed; other failures are recorded at once.
   * `delivery.attempt` (1-based) is logged with the start of the work ("answering batch question").
   */
  async processQuestion(event: BatchQuestionEvent, delivery: { isLastAttempt: boolean; attempt?: number }): Promise<void> {
    // The context is passed to every outgoing call; the logging context labels this work's log lines.
    const ctx: CallContext = { orgId: event.orgId, requestId: `batch:${event.batchId}:${event.index}` };
    return runWithContext(ctx, () => this.processInContext(ctx, event, delivery));
  }

  private async processInContext(ctx: CallContext, event: BatchQuestionEvent, delivery: { isLastAttempt: boolean; attempt?: number }): Promise<void> {
    // Handed over while the batch's creation is still queueing its questions: wait for its commit.
    await this.deps.repository.awaitCreation(event.batchId);
    const batch = await this.deps.repository.find(event.orgId, event.batchId);
    if (!batch) return;
    const item = await this.deps.repository.findQuestion(event.batchId, event.index);
    if (!item || item.status !== 'pending') return;
    this.deps.logger.info({ batch_id: batch.id, index: item.idx, attempt: delivery.attempt ?? 1 }, 'answering batch question');
    await this.deps.repository.markProcessing(batch.id);
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
      await this.deps.repository.recordOutcome(batch.id, item.idx, {
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
        (err instanceof AppError && TRANSIENT.has(err.code)) ||
        (err instanceof ModelProviderError && err.retryable) ||
        isAbortError(err) ||
        !(err instanceof Error);
      if (transient && !delivery.isLastAttempt) throw err;
      const message =
        err instanceof AppError
          ? err.message
          : err instanceof ModelProviderError
            ? 'The chat model could not answer this question.'
            : 'This question could not be answered because of an internal error.';
      this.deps.logger.warn({ err, batch_id: batch.id, index: item.idx }, 'batch question failed');
      await this.deps.repository.recordOutcome(batch.id, item.idx, {
        status: 'failed',
        answer: null,
        citations: [],
        agent: null,
        error: message,
        confidence: null,
      });
    }
  }
}

import { AppError, CallContext, createLogger, ErrorCode, PAGE_LIMIT_MAX } from '@kb/common';
import type { BatchQuestionEvent } from '@kb/events';
import type { Citation } from '@kb/knowledge';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { createTestDatabase } from '../../../../test/medium/database';
import type { AnswerService } from '../answering/answer.service';
import { openAgentDatabase } from '../database/database';
import { batchEvents } from './batch-events';
import { BATCH_FAILED_QUESTION_ERROR, BatchesRepository } from './batches.repository';
import { BatchesService, type NewBatch } from './batches.service';

// Batches on a real PostgreSQL: creation, work items answered (also twice, also concurrently),
// counters, completion with its webhook event, failures, listing and org scope. The answering
// itself (retrieval + model) is outside this test: a scripted answerer stands in for it.

const ORG: CallContext = { orgId: 'org-batch-a', requestId: 'r1' };
const OTHER: CallContext = { orgId: 'org-batch-b', requestId: 'r2' };

/** Answers "q…" questions; a question containing "fail:<code>" throws that AppError. */
function scriptedAnswers(): AnswerService & { calls: number } {
  const answerer = {
    calls: 0,
    async requireProject(_ctx: CallContext, projectId: string) {
      if (projectId === '00000000-0000-4000-8000-000000000000') throw AppError.notFound('Project not found.');
    },
    async answer(_ctx: CallContext, req: { messages: { content: string }[] }) {
      answerer.calls++;
      const question = req.messages[0].content;
      const failure = /fail:(\w+)/.exec(question);
      if (failure) throw new AppError(failure[1] as ErrorCode, `cannot answer ${question}`);
      return {
        answer: `answer to ${question}`,
        citations: [] as Citation[],
        agent: 'general',
        model: 'extractive',
        usage: {},
        finishReason: 'stop',
        confidence: 0.8,
      };
    },
  };
  return answerer as unknown as AnswerService & { calls: number };
}

describe('BatchesService on PostgreSQL', () => {
  let db: DataSource;
  let answers: ReturnType<typeof scriptedAnswers>;
  let published: BatchQuestionEvent[];
  let queueDown: boolean;
  let batches: BatchesService;
  const logger = createLogger('agent-medium');
  logger.level = 'silent';

  beforeAll(async () => {
    db = await openAgentDatabase(await createTestDatabase('batches'));
  });
  beforeEach(() => {
    answers = scriptedAnswers();
    published = [];
    queueDown = false;
    batches = new BatchesService({
      repository: new BatchesRepository(db, batchEvents),
      answers,
      logger,
      publish: async (event) => {
        if (queueDown) throw new Error('nats down');
        published.push(event);
      },
    });
  });
  afterAll(async () => {
    await db?.destroy();
  });

  const create = (ctx: CallContext, questions: string[], extra: Partial<NewBatch> = {}) =>
    batches.create(ctx, { questions, safetyAssistantEnabled: false, ...extra });
  const outboxTypes = async (batchId: string): Promise<string[]> =>
    (await db.query(`SELECT type FROM webhook_outbox WHERE resource_key = $1 ORDER BY seq`, [`batch:${batchId}`])).map((r: { type: string }) => r.type);

  it('creates a pending batch and queues one work item per question', async () => {
    const batch = await create(ORG, ['q1', 'q2', 'q3'], { name: 'My batch' });
    expect(batch).toMatchObject({ name: 'My batch', org_id: ORG.orgId, status: 'pending', total_questions: 3, processed_questions: 0 });
    expect(published).toEqual([0, 1, 2].map((index) => ({ batchId: batch.id, orgId: ORG.orgId, index })));
    const stored = await batches.get(ORG, batch.id);
    expect(stored!.questions.map((q) => [q.idx, q.question, q.status])).toEqual([
      [0, 'q1', 'pending'],
      [1, 'q2', 'pending'],
      [2, 'q3', 'pending'],
    ]);
  });

  it('records every question once, even when a work item is delivered twice at the same time, then completes with one event', async () => {
    const batch = await create(ORG, ['q1', 'q2']);
    await Promise.all(published.flatMap((e) => [batches.processQuestion(e, { isLastAttempt: false }), batches.processQuestion(e, { isLastAttempt: false })]));
    const done = await batches.get(ORG, batch.id);
    expect(done!.batch).toMatchObject({ status: 'completed', processed_questions: 2, failed_questions: 0 });
    expect(done!.questions.map((q) => [q.status, q.answer, q.confidence])).toEqual([
      ['completed', 'answer to q1', 0.8],
      ['completed', 'answer to q2', 0.8],
    ]);
    // A redelivery after the outcome is recorded does not answer again.
    const before = answers.calls;
    await batches.processQuestion(published[0], { isLastAttempt: true });
    expect(answers.calls).toBe(before);
    expect(await outboxTypes(batch.id)).toEqual(['batch.completed']);
  });

  it('retries a transient failure until the last attempt, then records the question as failed', async () => {
    const batch = await create(ORG, ['ok', `fail:${ErrorCode.SERVICE_UNAVAILABLE}`]);
    await batches.processQuestion(published[0], { isLastAttempt: false });
    await expect(batches.processQuestion(published[1], { isLastAttempt: false })).rejects.toMatchObject({ code: ErrorCode.SERVICE_UNAVAILABLE });
    expect((await batches.get(ORG, batch.id))!.batch).toMatchObject({ status: 'processing', processed_questions: 1 });
    await batches.processQuestion(published[1], { isLastAttempt: true });
    const done = await batches.get(ORG, batch.id);
    expect(done!.batch).toMatchObject({ status: 'completed', processed_questions: 2, failed_questions: 1 });
    expect(done!.questions[1]).toMatchObject({ status: 'failed', error: `cannot answer fail:${ErrorCode.SERVICE_UNAVAILABLE}` });
  });

  it('records a permanent failure at once', async () => {
    const batch = await create(ORG, [`fail:${ErrorCode.VALIDATION_ERROR}`]);
    await batches.processQuestion(published[0], { isLastAttempt: false });
    expect((await batches.get(ORG, batch.id))!.batch).toMatchObject({ status: 'completed', processed_questions: 1, failed_questions: 1 });
  });

  it('creates nothing when its questions cannot be queued; a worker handed a question before the commit waits for it', async () => {
    const count = async () => (await db.query(`SELECT count(*)::int AS n FROM batches WHERE org_id = $1`, [ORG.orgId]))[0].n as number;
    const before = await count();
    queueDown = true;
    await expect(create(ORG, ['q'])).rejects.toMatchObject({ code: ErrorCode.SERVICE_UNAVAILABLE });
    expect(await count()).toBe(before);
    expect((await db.query(`SELECT count(*)::int AS n FROM audit.audit_events WHERE org_id = $1 AND action = 'batch.created'`, [ORG.orgId]))[0].n).toBe(before);

    // The queue works: the first question is handed to a worker while the creation is still queueing.
    queueDown = false;
    let early: Promise<void> | undefined;
    const slow = new BatchesService({
      repository: new BatchesRepository(db, batchEvents),
      answers,
      logger,
      publish: async (event) => {
        published.push(event);
        if (!early) early = batches.processQuestion(event, { isLastAttempt: false });
        await new Promise((r) => setTimeout(r, 200));
      },
    });
    const batch = await slow.create(ORG, { questions: ['q1', 'q2'], safetyAssistantEnabled: false });
    await early;
    for (const event of published.slice(1)) await batches.processQuestion(event, { isLastAttempt: false });
    expect((await batches.get(ORG, batch.id))!.batch).toMatchObject({ status: 'completed', processed_questions: 2, failed_questions: 0 });
  });

  it('keeps a failed batch failed: its unanswered questions fail with it and work items queued before the failure answer nothing', async () => {
    const batch = await create(ORG, ['q1', 'q2', 'q3']);
    await batches.processQuestion(published[0], { isLastAttempt: false });
    const repository = new BatchesRepository(db, batchEvents);
    expect(await repository.markFailed(batch.id)).toBe(true);
    const calls = answers.calls;
    for (const item of published) await batches.processQuestion(item, { isLastAttempt: true });
    expect(answers.calls).toBe(calls);
    const after = await batches.get(ORG, batch.id);
    expect(after!.batch).toMatchObject({ status: 'failed', total_questions: 3, processed_questions: 3, failed_questions: 2 });
    expect(after!.questions.map((q) => [q.status, q.error])).toEqual([
      ['completed', null],
      ['failed', BATCH_FAILED_QUESTION_ERROR],
      ['failed', BATCH_FAILED_QUESTION_ERROR],
    ]);
    expect(await outboxTypes(batch.id)).toEqual(['batch.failed']);
    // A completed batch cannot fail afterwards.
    const done = await create(ORG, ['q']);
    await batches.processQuestion(published[published.length - 1], { isLastAttempt: false });
    expect(await repository.markFailed(done.id)).toBe(false);
    expect((await batches.get(ORG, done.id))!.batch.status).toBe('completed');
    expect(await outboxTypes(done.id)).toEqual(['batch.completed']);
  });

  it('refuses bad input before writing anything', async () => {
    const count = async () => (await db.query(`SELECT count(*)::int AS n FROM batches`))[0].n;
    const before = await count();
    await expect(create(ORG, [])).rejects.toMatchObject({ code: ErrorCode.VALIDATION_ERROR });
    await expect(create(ORG, ['q'], { chatType: 'project' })).rejects.toMatchObject({ code: ErrorCode.VALIDATION_ERROR });
    await expect(create(ORG, ['q'], { chatType: 'safety' })).rejects.toMatchObject({ code: ErrorCode.AGENT_NOT_ENABLED });
    await expect(create(ORG, ['q'], { projectId: '00000000-0000-4000-8000-000000000000' })).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND });
    expect(await count()).toBe(before);
  });

  it("lists and shows only the caller's batches, newest first, filtered by project and status", async () => {
    const projectId = randomUUID();
    const a = await create(OTHER, ['x'], { projectId, name: 'a' });
    const b = await create(OTHER, ['y'], { projectId, name: 'b' });
    await create(OTHER, ['z'], { name: 'c' });
    await batches.processQuestion(
      published.find((e) => e.batchId === b.id)!,
      { isLastAttempt: false },
    );
    const all = await batches.list(OTHER, { limit: 10, offset: 0 });
    expect(all.total).toBe(3);
    expect(all.rows.map((x) => x.name)).toEqual(['c', 'b', 'a']);
    const inProject = await batches.list(OTHER, { projectId, limit: 1, offset: 1 });
    expect([inProject.total, inProject.rows.map((x) => x.name)]).toEqual([2, ['a']]);
    const completed = await batches.list(OTHER, { status: 'completed', limit: 10, offset: 0 });
    expect(completed.rows.map((x) => x.id)).toEqual([b.id]);
    await expect(batches.list(OTHER, { limit: PAGE_LIMIT_MAX + 1 })).rejects.toMatchObject({ code: ErrorCode.VALIDATION_ERROR });
    // Another org sees none of them, by list or by id.
    expect((await batches.list(ORG, { projectId, limit: 10, offset: 0 })).total).toBe(0);
    await expect(batches.get(ORG, a.id)).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND });
    expect(await batches.get(ORG, a.id, false, false)).toBeNull();
    // A work item carrying another org's id does nothing.
    await batches.processQuestion({ batchId: a.id, orgId: ORG.orgId, index: 0 }, { isLastAttempt: true });
    expect((await batches.get(OTHER, a.id))!.batch).toMatchObject({ status: 'pending', processed_questions: 0 });
  });
});

import { batchQuestionStatus, batchStatus } from '@kb/events';
import { agentV1 } from '@kb/proto';
import type { BatchRow, QuestionRow } from '../batches/batch-rows';

/** A batch row (and its questions, in order) as its gRPC message. */
export function toBatch(r: BatchRow, questions: QuestionRow[]): agentV1.Batch {
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

import { pickSnakeFields } from '@kb/common';
import { presentBatch, presentPlacement, batchQuestionStatus } from '@kb/events';
import { agentV1, commonV1 } from '@kb/proto';
import { sourceLabel } from '../common/source-label';

/**
 * Citation as returned by query, chat and batches (decisions.md "POST /api/v2/agent/query"), with
 * where its quote stands (`location`, `boxes`: {@link presentPlacement}).
 */
export function presentCitation(c: agentV1.Citation) {
  // Batches store citations as given: results stored before `section` or `location` existed have
  // none (null; boxes []).
  return {
    ...pickSnakeFields(c, ['index', 'documentId', 'fileName', 'chunkId', 'startPage', 'endPage', 'quote', 'score', 'section'], null),
    ...presentPlacement(c),
  };
}

/** Token usage in snake case. */
export function presentUsage(u: commonV1.Usage | undefined) {
  return { prompt_tokens: u?.promptTokens ?? 0, completion_tokens: u?.completionTokens ?? 0, total_tokens: u?.totalTokens ?? 0 };
}

/**
 * The fields an answer shares with a chat reply (decisions.md "POST /api/v2/agent/query"):
 * `citations`, `agent`, `model`, `usage` and `confidence`, in that order.
 */
export function presentAnswerFields(a: Pick<agentV1.Answer, 'citations' | 'agent' | 'model' | 'usage' | 'confidence'>) {
  return {
    citations: a.citations.map(presentCitation),
    agent: a.agent,
    model: a.model,
    usage: presentUsage(a.usage),
    confidence: presentConfidence(a.confidence),
  };
}

/** Batch summary (decisions.md "Batches"): one presenter, shared with the webhook payloads (@kb/events). */
export { presentBatch };

/** One question's result in batch detail. */
export function presentBatchResult(r: agentV1.BatchResult) {
  return {
    index: r.index,
    question: r.question,
    status: batchQuestionStatus.fromProto(r.status),
    answer: r.answer ?? null,
    citations: r.citations.map(presentCitation),
    confidence: r.confidence ?? null,
    error: r.error ?? null,
  };
}

/** A confidence as sent to clients: 0–1, three decimals. */
export function presentConfidence(c: number | undefined): number {
  return Math.round((c ?? 0) * 1000) / 1000;
}

/**
 * The `sources` cell of the CSV export: each citation as `file_name p.X-Y` (just `file_name` when
 * the format has no pages), joined by `; `.
 */
export function sourcesCell(citations: agentV1.Citation[]): string {
  return citations.map((c) => sourceLabel(c.fileName, c.startPage, c.endPage)).join('; ');
}

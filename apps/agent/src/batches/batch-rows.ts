/**
 * Row types of the batch tables (`batches`, `batch_questions`), shared by the repository that reads them, the
 * events built from them and the use cases; kept apart from the repository so that those never import it for a
 * type (issue 32: no import circles).
 */
import type { OutboxEventInput } from '@kb/common';
import type { BatchQuestionStatus, BatchStatus, WebhookEventType } from '@kb/events';
import type { agentV1 } from '@kb/proto';

/** A row of `batches`. Timestamps are Date; counters are integers. */
export interface BatchRow {
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

/** A row of `batch_questions` (the columns a batch's GET shows). */
export interface QuestionRow {
  idx: number;
  question: string;
  status: BatchQuestionStatus;
  answer: string | null;
  citations: agentV1.Citation[];
  agent: string | null;
  error: string | null;
  confidence: number | null;
}

/** The webhook events of a batch's state changes (`batch.completed`, `batch.failed`). */
export type BatchEventType = Extract<WebhookEventType, `batch.${string}`>;

/**
 * Builds the webhook events the BatchesRepository writes to the outbox in the transaction of each
 * state change. The agent service supplies them (`batchEvents`, batch-events.ts), since the event's
 * `data` is the batch's public JSON; the repository decides when one is due and writes it.
 */
export interface BatchEventBuilders {
  /** The event of a batch's state change, `data` the batch as GET shows it (without results). */
  batch(type: BatchEventType, batch: BatchRow): OutboxEventInput;
}

/**
 * Row types of the batch tables (`batches`, `batch_questions`), shared by the repository that reads them, the
 * events built from them and the use cases; kept apart from the repository so that those never import it for a
 * type (issue 32: no import circles).
 */
import type { BatchQuestionStatus, BatchStatus } from '@kb/events';
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

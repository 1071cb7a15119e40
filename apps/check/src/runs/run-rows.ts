/**
 * Row types of the check tables (`check_runs`, `check_requirements`, `check_sub_requirements`), shared by the
 * repository that reads them, the events and the proto mappers built from them, and the use cases; kept apart
 * from the repository so that those never import it for a type (issue 32: no import circles).
 */
import type { OutboxEventInput } from '@kb/common';
import type { RequirementStatus, RunStatus, SubRequirementStatus, WebhookEventType } from '@kb/events';

export type { RequirementStatus, RunStatus, SubRequirementStatus };

/** A row of `check_runs`. Timestamps are Date; counters are integers. */
export interface RunRow {
  id: string;
  org_id: string;
  project_id: string;
  name: string;
  status: RunStatus;
  handbook_ids: string[];
  total_requirements: number;
  processed_requirements: number;
  passed_requirements: number;
  failed_requirements: number;
  generation: number;
  task_id: string | null;
  skip_breakdown: boolean;
  error_message: string | null;
  processing_started_at: Date | null;
  processing_completed_at: Date | null;
  created_at: Date;
  updated_at: Date;
  /** Counts with people's reviews applied (decisions.md "Review of check results"); see REVIEW_SUMMARY_SQL. */
  review_summary: ReviewSummary;
  /** The run this one re-runs (decisions.md "Re-running and comparing check runs"); null for a run created directly. */
  source_run_id: string | null;
}

/**
 * `reviewed`: completed requirements with a current (not outdated) review; `passed`/`failed`: every
 * completed requirement counted by its current review's decision, else by the machine's result.
 */
export interface ReviewSummary {
  reviewed: number;
  passed: number;
  failed: number;
}

/** A person's decision on a requirement; `review_decision` null = not reviewed (the other review columns are then null/false). */
export type ReviewDecision = 'pass' | 'fail';

export interface RequirementRow {
  id: string;
  run_id: string;
  org_id: string;
  order_index: number;
  text: string;
  metadata: Record<string, unknown> | null;
  status: RequirementStatus;
  passed: boolean | null;
  review_decision: ReviewDecision | null;
  review_comment: string | null;
  review_reviewer: string | null;
  reviewed_at: Date | null;
  /** True when the requirement was checked again after the review. */
  review_outdated: boolean;
  created_at: Date;
  updated_at: Date;
}

/** A source as stored with a sub-requirement (decisions.md "Source"). */
export interface StoredSource {
  handbook_id: string;
  node_id: string;
  title: string;
  start_page: number | null;
  end_page: number | null;
  /** Heading path of the chunk; absent in sources stored before it was recorded (shown as null). */
  section?: string | null;
  /**
   * The evidence quote's offsets in the chunk text (decisions.md "Where a quote stands"); absent in
   * sources stored before locations were recorded (shown as null).
   */
  location?: { char_start: number; char_end: number } | null;
  /** One box per line of the quote in its PDF page (points, top-left origin); absent = none. */
  boxes?: { page: number; x0: number; y0: number; x1: number; y1: number }[];
}

export interface SubRequirementRow {
  id: string;
  requirement_id: string;
  run_id: string;
  org_id: string;
  order_index: number;
  text: string;
  justification: string;
  /** The confidence shown: `judge_score`, or what the run-level reading made of it once the run completed (run-corroboration.ts). */
  score: number;
  /** Confidence of the verdict on its own; null in rows stored before it was recorded. */
  judge_score: number | null;
  /** The justification of the verdict on its own; null in rows stored before it was recorded. */
  judge_justification: string | null;
  /** The verdict on its own (`verdict` differs once a doubtful run turned it NOT_FOUND); null in rows stored before it was recorded. */
  judge_verdict: string | null;
  /** The embedded judge's calibrated P(COMPLIANT) when its `rsm` variant decided; null for its other variants, a chat-model judge and rows stored before it was recorded. */
  p_compliant: number | null;
  /** What a corroborating run shows as justification; null when the verdict may not be raised. */
  corroborated_justification: string | null;
  status: SubRequirementStatus;
  verdict: string | null;
  sources: StoredSource[] | null;
  created_at: Date;
  updated_at: Date;
}

/** A requirement with its sub-requirements, in order. */
export interface RequirementWithSubs {
  requirement: RequirementRow;
  subs: SubRequirementRow[];
}

/** The webhook events of a run's state changes (`check_run.completed`, `.stopped`, `.failed`). */
export type RunEventType = Exclude<Extract<WebhookEventType, `check_run.${string}`>, 'check_run.requirement_reviewed'>;

/**
 * Builds the webhook events the repository writes to the outbox in the transaction of each state
 * change. The check service supplies them (`runEvents`, run-events.ts), since the event's `data` is
 * the public JSON of the run or requirement; the repository decides when one is due (the transition
 * applied under its row lock) and writes it.
 */
export interface RunEventBuilders {
  /** The event of a run's state change, `data` the run as GET shows it. */
  run(type: RunEventType, run: RunRow, at: Date): OutboxEventInput;
  /** `check_run.requirement_reviewed`, `data` the requirement with its review. */
  requirement(requirement: RequirementRow, subs: SubRequirementRow[], at: Date): OutboxEventInput;
}

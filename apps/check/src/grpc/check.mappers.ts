import { pickCamelFields, pickFields } from '@kb/common';
import { requirementStatus, runStatus, subRequirementStatus } from '@kb/events';
import { checkV1 } from '@kb/proto';
import type { Comparison, RequirementOutcome } from '../runs/run-compare';
import type { RequirementRow, RequirementWithSubs, RunRow, StoredSource } from '../runs/run-rows';
import type { Verification } from '../verification/verify.service';

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : undefined);

/** A cited source (decisions.md "Source") as its gRPC message; absent pages, section and location are unset. */
export function toProtoSource(s: StoredSource): checkV1.Source {
  return {
    ...pickCamelFields(s, ['handbook_id', 'node_id', 'title', 'start_page', 'end_page', 'section'], undefined),
    location: s.location ? { charStart: s.location.char_start, charEnd: s.location.char_end } : undefined,
    boxes: s.boxes ?? [],
  };
}

/** A check run row as its gRPC message (what the gateway presents), with the given requirements. */
export function toProtoRun(r: RunRow, requirements: RequirementWithSubs[] = []): checkV1.CheckRun {
  return {
    ...pickCamelFields(
      r,
      [
        'id',
        'name',
        'org_id',
        'project_id',
        'total_requirements',
        'processed_requirements',
        'passed_requirements',
        'failed_requirements',
        'error_message',
        'source_run_id',
      ],
      undefined,
    ),
    status: runStatus.toProto(r.status),
    processingStartedAt: iso(r.processing_started_at),
    processingCompletedAt: iso(r.processing_completed_at),
    createdAt: iso(r.created_at)!,
    updatedAt: iso(r.updated_at)!,
    handbookIds: r.handbook_ids ?? [],
    requirements: requirements.map(toProtoRequirement),
    reviewSummary: r.review_summary ?? { reviewed: 0, passed: 0, failed: 0 },
  };
}

/** A requirement's review columns as the gRPC message; undefined when it has no review. */
export function toProtoReview(r: RequirementRow): checkV1.RequirementReview | undefined {
  if (r.review_decision === null || r.review_decision === undefined) return undefined;
  return {
    decision: r.review_decision,
    comment: r.review_comment ?? undefined,
    reviewer: r.review_reviewer ?? '',
    reviewedAt: iso(r.reviewed_at)!,
    outdated: r.review_outdated,
  };
}

/**
 * A requirement with its sub-requirements as its gRPC message: `metadata_json` is the client's
 * object serialised ('' when none); `has_sources` tells "not yet checked" (null) from "no sources";
 * `review` is unset until reviewed.
 */
export function toProtoRequirement({ requirement: r, subs }: RequirementWithSubs): checkV1.Requirement {
  return {
    id: r.id,
    runId: r.run_id,
    text: r.text,
    orderIndex: r.order_index,
    status: requirementStatus.toProto(r.status),
    metadataJson: r.metadata === null || r.metadata === undefined ? '' : JSON.stringify(r.metadata),
    createdAt: iso(r.created_at)!,
    updatedAt: iso(r.updated_at)!,
    subRequirements: subs.map((s) => ({
      id: s.id,
      requirementId: s.requirement_id,
      text: s.text,
      justification: s.justification,
      score: s.score,
      status: subRequirementStatus.toProto(s.status),
      hasSources: s.sources !== null,
      sources: (s.sources ?? []).map(toProtoSource),
    })),
    review: toProtoReview(r),
  };
}

/** A requirement's outcome in a comparison as its gRPC message; `score` unset when null. */
function toProtoOutcome(o: RequirementOutcome | null): checkV1.RequirementOutcome | undefined {
  if (!o) return undefined;
  return { result: o.result, score: o.score ?? undefined, evidence: o.evidence, sources: o.sources.map(toProtoSource) };
}

/** A run comparison (decisions.md "Re-running and comparing check runs") as its gRPC message; a missing side is unset. */
export function toProtoComparison(c: Comparison & { runId: string; withRunId: string }): checkV1.RunComparison {
  return {
    runId: c.runId,
    withRunId: c.withRunId,
    summary: { unchanged: c.summary.unchanged, changed: c.summary.changed, onlyInRun: c.summary.only_in_run, onlyInWith: c.summary.only_in_with },
    changes: c.changes.map((x) => ({ orderIndex: x.order_index, text: x.text, before: toProtoOutcome(x.before), after: toProtoOutcome(x.after) })),
  };
}

/** A single-requirement verdict as its gRPC message (service-api.md §2 "Single-requirement verdict"). */
export function toProtoVerdict(v: Verification): checkV1.Verdict {
  return {
    ...pickFields(v, ['verdict', 'confidence', 'evidence', 'explanation', 'recommendation', 'handbook', 'usage'], undefined),
    sources: v.sources.map(toProtoSource),
  };
}

import { OutboxEventInput } from '@kb/common';
import { presentRun, WebhookEventType } from '@kb/events';
import { checkV1 } from '@kb/proto';
import type { RunRow } from './runs.repository';

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : undefined);

/** A check run row as its gRPC message (what the gateway presents), with the given requirements. */
export function toProtoRun(r: RunRow, requirements: checkV1.Requirement[] = []): checkV1.CheckRun {
  return {
    id: r.id,
    name: r.name,
    orgId: r.org_id,
    projectId: r.project_id,
    status: r.status,
    totalRequirements: r.total_requirements,
    processedRequirements: r.processed_requirements,
    passedRequirements: r.passed_requirements,
    failedRequirements: r.failed_requirements,
    processingStartedAt: iso(r.processing_started_at),
    processingCompletedAt: iso(r.processing_completed_at),
    createdAt: iso(r.created_at)!,
    updatedAt: iso(r.updated_at)!,
    handbookIds: r.handbook_ids ?? [],
    errorMessage: r.error_message ?? undefined,
    requirements,
  };
}

/** The webhook event of a run's state change, `data` being the run as GET shows it (without requirements). */
export function runEvent(type: Extract<WebhookEventType, `check_run.${string}`>, r: RunRow, at: Date): OutboxEventInput {
  return { type, orgId: r.org_id, resourceKey: `check_run:${r.id}`, data: presentRun(toProtoRun(r)), at };
}

import { OutboxEventInput } from '@kb/common';
import { presentRequirement, presentRun } from '@kb/events';
import { toProtoRequirement, toProtoRun } from '../grpc/check.mappers';
import type { RequirementRow, RunEventBuilders, RunEventType, RunRow, SubRequirementRow } from './run-rows';

/** The webhook event of a run's state change, `data` being the run as GET shows it (without requirements). */
export function runEvent(type: RunEventType, r: RunRow, at: Date): OutboxEventInput {
  return { type, orgId: r.org_id, resourceKey: `check_run:${r.id}`, data: presentRun(toProtoRun(r)), at };
}

/**
 * `check_run.requirement_reviewed`: a requirement's review was set, replaced or removed; `data` is
 * the requirement as `GET …/requirements` lists it, with its `review` (null once removed). Ordered
 * with the run's other events (same resource key).
 */
export function requirementEvent(requirement: RequirementRow, subs: SubRequirementRow[], at: Date): OutboxEventInput {
  return {
    type: 'check_run.requirement_reviewed',
    orgId: requirement.org_id,
    resourceKey: `check_run:${requirement.run_id}`,
    data: presentRequirement(toProtoRequirement({ requirement, subs })),
    at,
  };
}

/** The check service's webhook events, handed to the RunsRepository that writes them (main.ts). */
export const runEvents: RunEventBuilders = { run: runEvent, requirement: requirementEvent };

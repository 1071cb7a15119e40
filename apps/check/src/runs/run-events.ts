import { OutboxEventInput } from '@kb/common';
import { presentRun, WebhookEventType } from '@kb/events';
import { toProtoRun } from '../grpc/check.mappers';
import type { RunRow } from './runs.repository';

/** The webhook event of a run's state change, `data` being the run as GET shows it (without requirements). */
export function runEvent(type: Extract<WebhookEventType, `check_run.${string}`>, r: RunRow, at: Date): OutboxEventInput {
  return { type, orgId: r.org_id, resourceKey: `check_run:${r.id}`, data: presentRun(toProtoRun(r)), at };
}

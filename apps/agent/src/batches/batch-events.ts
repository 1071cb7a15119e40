import { OutboxEventInput } from '@kb/common';
import { presentBatch } from '@kb/events';
import { toBatch } from '../grpc/agent.mappers';
import type { BatchEventBuilders, BatchEventType, BatchRow } from './batch-rows';

/** The webhook event of a batch's state change, `data` being the batch as GET shows it (without results). */
export function batchEvent(type: BatchEventType, r: BatchRow): OutboxEventInput {
  const at = new Date(r.updated_at);
  return { type, orgId: r.org_id, resourceKey: `batch:${r.id}`, data: presentBatch(toBatch(r, [])), at };
}

/** The agent service's webhook events, handed to the BatchesRepository that writes them (main.ts). */
export const batchEvents: BatchEventBuilders = { batch: batchEvent };

import { AuditEvents1764700000000, openDatabase, WebhookOutbox1764000000000 } from '@kb/common';
import { DataSource } from 'typeorm';
import { InitBatches1732300000000 } from './migrations/1732300000000-InitBatches';
import { BatchConfidence1763900000000 } from './migrations/1763900000000-BatchConfidence';

/** Migrations of the schema `agent`, oldest first. */
export const AGENT_MIGRATIONS = [InitBatches1732300000000, BatchConfidence1763900000000, WebhookOutbox1764000000000, AuditEvents1764700000000];

/**
 * Opens the agent's schema (`agent`: batches, their questions, the webhook outbox) and runs its
 * migrations (openDatabase of @kb/common). The service and its medium tests open it the same way.
 * @param url PostgreSQL connection URL (DATABASE_URL).
 * @throws when the database is unreachable or a migration fails.
 */
export function openAgentDatabase(url: string): Promise<DataSource> {
  return openDatabase({ url, schema: 'agent', entities: [], migrations: AGENT_MIGRATIONS });
}

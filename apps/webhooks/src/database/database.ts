import { AuditEvents1764700000000, openDatabase } from '@kb/common';
import { DataSource } from 'typeorm';
import { InitWebhooks1764000000001 } from './migrations/1764000000001-InitWebhooks';

/** Migrations of the schema `webhooks`, oldest first. */
export const WEBHOOKS_MIGRATIONS = [InitWebhooks1764000000001, AuditEvents1764700000000];

/**
 * Opens the webhooks service's schema (`webhooks`: endpoints and their delivery log) and runs its
 * migrations (openDatabase of @kb/common). The service and its tests open it the same way.
 * @param url PostgreSQL connection URL (DATABASE_URL).
 * @throws when the database is unreachable or a migration fails.
 */
export function openWebhooksDatabase(url: string): Promise<DataSource> {
  return openDatabase({ url, schema: 'webhooks', entities: [], migrations: WEBHOOKS_MIGRATIONS });
}

import { AuditEvents1764700000000, openDatabase, WebhookOutbox1764000000000 } from '@kb/common';
import { DataSource } from 'typeorm';
import { InitCheckRuns1732300000000 } from './migrations/1732300000000-InitCheckRuns';
import { RequirementReviews1764500000000 } from './migrations/1764500000000-RequirementReviews';
import { RunSourceRun1764600000000 } from './migrations/1764600000000-RunSourceRun';
import { SubRequirementCorroboration1764800000000 } from './migrations/1764800000000-SubRequirementCorroboration';

/** Migrations of the schema `check`, oldest first. */
export const CHECK_MIGRATIONS = [
  InitCheckRuns1732300000000,
  WebhookOutbox1764000000000,
  RequirementReviews1764500000000,
  RunSourceRun1764600000000,
  AuditEvents1764700000000,
  SubRequirementCorroboration1764800000000,
];

/**
 * Opens the check service's schema (`check`: runs, requirements with their reviews, sub-requirements,
 * the webhook outbox; and `audit.audit_events`, shared) and runs its migrations (openDatabase of @kb/common). The service and its medium tests
 * open it the same way.
 * @param url PostgreSQL connection URL (DATABASE_URL).
 * @throws when the database is unreachable or a migration fails.
 */
export function openCheckDatabase(url: string): Promise<DataSource> {
  return openDatabase({ url, schema: 'check', entities: [], migrations: CHECK_MIGRATIONS });
}

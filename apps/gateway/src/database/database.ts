import { AuditEvents1764700000000, openDatabase } from '@kb/common';
import { DataSource } from 'typeorm';
import { ApiKeyEntity, OrganizationEntity } from '../accounts/account.entities';
import { InitAccounts1732200000001 } from './migrations/1732200000001-InitAccounts';
import { GatewayLimits1732200000002 } from './migrations/1732200000002-GatewayLimits';
import { RateLimitLeases1732200000003 } from './migrations/1732200000003-RateLimitLeases';

/** Migrations of the schema `gateway`, oldest first. */
export const GATEWAY_MIGRATIONS = [InitAccounts1732200000001, GatewayLimits1732200000002, RateLimitLeases1732200000003, AuditEvents1764700000000];

/**
 * Opens the gateway's schema (`gateway`: organizations, API keys, usage counters, idempotency
 * keys, rate-limit windows) with its TypeORM entities and runs its migrations (openDatabase of
 * @kb/common). The gateway, kbctl and the tests open it the same way.
 * @param url PostgreSQL connection URL (DATABASE_URL).
 * @param poolSize connections in the pool (the gateway uses 20, kbctl the default 5).
 * @throws when the database is unreachable or a migration fails.
 */
export function openGatewayDatabase(url: string, poolSize = 5): Promise<DataSource> {
  return openDatabase({ url, schema: 'gateway', entities: [OrganizationEntity, ApiKeyEntity], migrations: GATEWAY_MIGRATIONS, poolSize });
}

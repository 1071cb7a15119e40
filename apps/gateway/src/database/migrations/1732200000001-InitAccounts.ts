import { sqlMigration } from '@kb/common';

/** Organizations and API keys (schema `gateway`). Keys are stored only as SHA-256 hashes. */
export const InitAccounts1732200000001 = sqlMigration('InitAccounts1732200000001', {
  up: [
    `
      CREATE TABLE organizations (
        id text PRIMARY KEY,
        name varchar(200) NOT NULL,
        safety_assistant_enabled boolean NOT NULL DEFAULT false,
        monthly_request_quota bigint NULL,
        monthly_token_quota bigint NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL
      )`,
    `
      CREATE TABLE api_keys (
        id uuid PRIMARY KEY,
        org_id text NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        name varchar(200) NULL,
        key_hash char(64) NOT NULL UNIQUE,
        key_prefix varchar(16) NOT NULL,
        rate_limit_per_minute integer NOT NULL,
        created_at timestamptz NOT NULL,
        revoked_at timestamptz NULL
      )`,
    `CREATE INDEX api_keys_org_idx ON api_keys (org_id, created_at DESC)`,
  ],
  down: [`DROP TABLE api_keys`, `DROP TABLE organizations`],
});

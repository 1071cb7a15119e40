import { sqlMigration } from '@kb/common';

/**
 * Gateway-wide limits (schema `gateway`): per-key rate-limit windows (table layout of
 * rate-limiter-flexible's PostgreSQL store; replaced by RateLimitLeases1732200000003), monthly usage counters per organization, the ids of
 * usage events already counted (at-least-once delivery), and idempotency records.
 */
export const GatewayLimits1732200000002 = sqlMigration('GatewayLimits1732200000002', {
  up: [
    // rate-limiter-flexible RateLimiterPostgres table: key, points, expire (epoch ms). UNLOGGED:
    // counters of one-minute windows need no crash durability, and without WAL each increment
    // commits without an fsync (every request of a key updates the same row, so commits of that
    // row are serialised and an fsync each would cap a key at a few hundred requests per second).
    `
      CREATE UNLOGGED TABLE rate_limits (
        key varchar(255) PRIMARY KEY,
        points integer NOT NULL DEFAULT 0,
        expire bigint
      )`,
    `
      CREATE TABLE usage_monthly (
        org_id text NOT NULL,
        month date NOT NULL,
        requests bigint NOT NULL DEFAULT 0,
        tokens bigint NOT NULL DEFAULT 0,
        PRIMARY KEY (org_id, month)
      )`,
    `
      CREATE TABLE usage_events (
        id uuid PRIMARY KEY,
        org_id text NOT NULL,
        total_tokens bigint NOT NULL,
        recorded_at timestamptz NOT NULL
      )`,
    `CREATE INDEX usage_events_recorded_idx ON usage_events (recorded_at)`,
    `
      CREATE TABLE idempotency_keys (
        org_id text NOT NULL,
        key varchar(255) NOT NULL,
        method varchar(10) NOT NULL,
        path text NOT NULL,
        request_hash char(64) NOT NULL,
        state varchar(16) NOT NULL,
        response_status integer NULL,
        response_body jsonb NULL,
        created_at timestamptz NOT NULL,
        PRIMARY KEY (org_id, key)
      )`,
    `CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at)`,
  ],
  down: [`DROP TABLE idempotency_keys`, `DROP TABLE usage_events`, `DROP TABLE usage_monthly`, `DROP TABLE rate_limits`],
});

import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Gateway-wide limits (schema `gateway`): per-key rate-limit windows (table layout of
 * rate-limiter-flexible's PostgreSQL store; replaced by RateLimitLeases1732200000003), monthly usage counters per organization, the ids of
 * usage events already counted (at-least-once delivery), and idempotency records.
 */
export class GatewayLimits1732200000002 implements MigrationInterface {
  name = 'GatewayLimits1732200000002';

  async up(q: QueryRunner): Promise<void> {
    // rate-limiter-flexible RateLimiterPostgres table: key, points, expire (epoch ms). UNLOGGED:
    // counters of one-minute windows need no crash durability, and without WAL each increment
    // commits without an fsync (every request of a key updates the same row, so commits of that
    // row are serialised and an fsync each would cap a key at a few hundred requests per second).
    await q.query(`
      CREATE UNLOGGED TABLE rate_limits (
        key varchar(255) PRIMARY KEY,
        points integer NOT NULL DEFAULT 0,
        expire bigint
      )`);
    await q.query(`
      CREATE TABLE usage_monthly (
        org_id text NOT NULL,
        month date NOT NULL,
        requests bigint NOT NULL DEFAULT 0,
        tokens bigint NOT NULL DEFAULT 0,
        PRIMARY KEY (org_id, month)
      )`);
    await q.query(`
      CREATE TABLE usage_events (
        id uuid PRIMARY KEY,
        org_id text NOT NULL,
        total_tokens bigint NOT NULL,
        recorded_at timestamptz NOT NULL
      )`);
    await q.query(`CREATE INDEX usage_events_recorded_idx ON usage_events (recorded_at)`);
    await q.query(`
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
      )`);
    await q.query(`CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE idempotency_keys`);
    await q.query(`DROP TABLE usage_events`);
    await q.query(`DROP TABLE usage_monthly`);
    await q.query(`DROP TABLE rate_limits`);
  }
}

import { sqlMigration } from '@kb/common';

/**
 * Rate-limit windows with leases (common/rate-limit.ts): one row per API key and one-minute
 * window, with the tokens granted to all replicas, whether the window is contended, and which
 * replicas hold leased tokens. Replaces rate-limiter-flexible's `rate_limits` table. UNLOGGED: the
 * counters of a one-minute window need no crash durability, and without WAL a grant commits
 * without an fsync.
 */
export const RateLimitLeases1732200000003 = sqlMigration('RateLimitLeases1732200000003', {
  up: [
    `DROP TABLE IF EXISTS rate_limits`,
    `
      CREATE UNLOGGED TABLE rate_limit_windows (
        key_id text NOT NULL,
        window_start bigint NOT NULL,
        granted integer NOT NULL,
        last_grant integer NOT NULL,
        contended boolean NOT NULL DEFAULT false,
        holders text[] NOT NULL DEFAULT '{}',
        PRIMARY KEY (key_id, window_start)
      )`,
  ],
  down: [
    `DROP TABLE rate_limit_windows`,
    `
      CREATE UNLOGGED TABLE rate_limits (
        key varchar(255) PRIMARY KEY,
        points integer NOT NULL DEFAULT 0,
        expire bigint
      )`,
  ],
});

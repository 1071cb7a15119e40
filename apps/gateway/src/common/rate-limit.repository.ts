import { rowsOf } from '@kb/common';
import { DataSource } from 'typeorm';

/** Outcome of one grant on the shared table. */
export interface WindowGrant {
  /** Tokens granted by this call (0 when the window's budget is used). */
  granted: number;
  /** Tokens granted in the window so far, all replicas together. */
  total: number;
  /** Whether the window is contended (grants are then single tokens). */
  contended: boolean;
}

/**
 * Data access for rate-limit windows (schema `gateway`, UNLOGGED table `rate_limit_windows`: one
 * row per API key id and one-minute window `window_start` = floor(epoch ms / 60 000), with the
 * tokens granted to all replicas, whether the window is contended and which replicas hold leased
 * tokens). Each method is one atomic statement; every value is a bound parameter. The lease
 * protocol itself is RateLimiter's (rate-limit.ts).
 */
export class RateLimitWindowsRepository {
  constructor(private readonly db: DataSource) {}

  /**
   * Grants up to `want` tokens of `limit` in the window (one token once the window is contended),
   * and records `replicaId` as a holder when it was granted more than one.
   */
  async grant(keyId: string, window: number, want: number, limit: number, replicaId: string): Promise<WindowGrant> {
    const [row] = rowsOf<{ last_grant: number; granted: number; contended: boolean }>(
      await this.db.query(
        `INSERT INTO rate_limit_windows AS w (key_id, window_start, granted, last_grant, holders)
         VALUES ($1, $2, LEAST($3::int, $4::int), LEAST($3::int, $4::int),
                 CASE WHEN LEAST($3::int, $4::int) > 1 THEN ARRAY[$5::text] ELSE '{}'::text[] END)
         ON CONFLICT (key_id, window_start) DO UPDATE SET
           last_grant = LEAST(CASE WHEN w.contended THEN 1 ELSE $3::int END, GREATEST(0, $4::int - w.granted)),
           granted = w.granted + LEAST(CASE WHEN w.contended THEN 1 ELSE $3::int END, GREATEST(0, $4::int - w.granted)),
           holders = CASE WHEN LEAST(CASE WHEN w.contended THEN 1 ELSE $3::int END, GREATEST(0, $4::int - w.granted)) > 1
                           AND NOT ($5::text = ANY (w.holders))
                          THEN array_append(w.holders, $5::text) ELSE w.holders END
         RETURNING last_grant, granted, contended`,
        [keyId, window, want, limit, replicaId],
      ),
    );
    return { granted: row.last_grant, total: row.granted, contended: row.contended };
  }

  /**
   * Marks the window contended and removes `replicaId` from its holders.
   * @returns the other replicas still holding leased tokens (empty when none, or no such window).
   */
  async contend(keyId: string, window: number, replicaId: string): Promise<string[]> {
    const [row] = rowsOf<{ holders: string[] }>(
      await this.db.query(
        `UPDATE rate_limit_windows SET contended = true, holders = array_remove(holders, $3::text)
         WHERE key_id = $1 AND window_start = $2 RETURNING holders`,
        [keyId, window, replicaId],
      ),
    );
    return row?.holders ?? [];
  }

  /** Returns `tokens` unused tokens of `replicaId` to the window's pool; it no longer holds any. */
  async giveBack(keyId: string, window: number, tokens: number, replicaId: string): Promise<void> {
    await this.db.query(
      `UPDATE rate_limit_windows SET granted = granted - $3, holders = array_remove(holders, $4::text)
       WHERE key_id = $1 AND window_start = $2`,
      [keyId, window, tokens, replicaId],
    );
  }

  /** Deletes the windows that started before `window`. */
  async deleteBefore(window: number): Promise<void> {
    await this.db.query(`DELETE FROM rate_limit_windows WHERE window_start < $1`, [window]);
  }
}

import { DataSource } from 'typeorm';

/**
 * Data access for monthly usage (schema `gateway`: `usage_monthly`, one row per organization and
 * quota month `YYYY-MM-01`; `usage_events`, the ids of token events already counted). Every counter
 * change is one atomic statement (an upsert), so replicas and concurrent requests never over- or
 * under-count. Every value is a bound parameter.
 */
export class UsageRepository {
  constructor(private readonly db: DataSource) {}

  /** Adds `requests` to the organization's request counter of `month` (creating the row). */
  async addRequests(orgId: string, month: string, requests: number): Promise<void> {
    await this.db.query(
      `INSERT INTO usage_monthly (org_id, month, requests, tokens) VALUES ($1, $2, $3, 0)
       ON CONFLICT (org_id, month) DO UPDATE SET requests = usage_monthly.requests + EXCLUDED.requests`,
      [orgId, month, requests],
    );
  }

  /**
   * Counts one request if both caps still leave room: requests below `requestCap` and tokens below
   * `tokenCap` (null = no cap), in one conditional upsert.
   * @returns false when a cap was reached (nothing counted).
   */
  async countRequestWithin(orgId: string, month: string, requestCap: number | null, tokenCap: number | null): Promise<boolean> {
    const rows: unknown[] = await this.db.query(
      `INSERT INTO usage_monthly (org_id, month, requests, tokens) VALUES ($1, $2, 1, 0)
       ON CONFLICT (org_id, month) DO UPDATE SET requests = usage_monthly.requests + 1
         WHERE ($3::bigint IS NULL OR usage_monthly.requests < $3::bigint)
           AND ($4::bigint IS NULL OR usage_monthly.tokens < $4::bigint)
       RETURNING requests`,
      [orgId, month, requestCap, tokenCap],
    );
    return rows.length > 0;
  }

  /** Requests and tokens counted for the organization in `month` (zeros when nothing was). */
  async find(orgId: string, month: string): Promise<{ requests: number; tokens: number }> {
    const rows: Array<{ requests: string; tokens: string }> = await this.db.query(
      `SELECT requests, tokens FROM usage_monthly WHERE org_id = $1 AND month = $2`,
      [orgId, month],
    );
    return { requests: Number(rows[0]?.requests ?? 0), tokens: Number(rows[0]?.tokens ?? 0) };
  }

  /**
   * Adds the tokens of one event to the organization's counter of `month`, once per event id: the
   * id is recorded in the same transaction.
   * @returns false when the event had already been counted.
   */
  async addTokensOnce(event: { id: string; orgId: string; tokens: number; at: Date }, month: string): Promise<boolean> {
    return this.db.transaction(async (m) => {
      const inserted: unknown[] = await m.query(
        `INSERT INTO usage_events (id, org_id, total_tokens, recorded_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (id) DO NOTHING RETURNING id`,
        [event.id, event.orgId, event.tokens, event.at.toISOString()],
      );
      if (inserted.length === 0) return false;
      await m.query(
        `INSERT INTO usage_monthly (org_id, month, requests, tokens) VALUES ($1, $2, 0, $3)
         ON CONFLICT (org_id, month) DO UPDATE SET tokens = usage_monthly.tokens + EXCLUDED.tokens`,
        [event.orgId, month, event.tokens],
      );
      return true;
    });
  }

  /** Deletes de-duplication records older than 8 days (the usage stream keeps events 7 days). */
  async purgeOldEvents(): Promise<void> {
    await this.db.query(`DELETE FROM usage_events WHERE recorded_at < now() - interval '8 days'`);
  }
}

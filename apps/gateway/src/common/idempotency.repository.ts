import { DataSource } from 'typeorm';

/** A stored idempotency key as the replay check needs it. */
export interface IdempotencyKeyRow {
  request_hash: string;
  /** `in_flight` while the first request runs, `completed` once its response is stored. */
  state: string;
  response_status: number | null;
  response_body: unknown;
}

/**
 * Data access for idempotency keys (schema `gateway`, table `idempotency_keys`, primary key
 * `(org_id, key)`: keys are scoped per organization). Every value is a bound parameter.
 */
export class IdempotencyKeysRepository {
  constructor(private readonly db: DataSource) {}

  /**
   * Claims a key for a first request (state `in_flight`), atomically: a new key, a key older than
   * `ttlHours`, or one left in flight longer than `abandonedMinutes` (its gateway died) is taken;
   * any other existing key is left as it is.
   * @returns whether this call claimed the key.
   */
  async claim(
    orgId: string,
    key: string,
    request: { method: string; path: string; hash: string },
    windows: { ttlHours: number; abandonedMinutes: number },
  ): Promise<boolean> {
    const claimed: unknown[] = await this.db.query(
      `INSERT INTO idempotency_keys (org_id, key, method, path, request_hash, state, created_at)
       VALUES ($1, $2, $3, $4, $5, 'in_flight', now())
       ON CONFLICT (org_id, key) DO UPDATE
         SET method = EXCLUDED.method, path = EXCLUDED.path, request_hash = EXCLUDED.request_hash,
             state = 'in_flight', response_status = NULL, response_body = NULL, created_at = now()
         WHERE idempotency_keys.created_at < now() - make_interval(hours => $6)
            OR (idempotency_keys.state = 'in_flight' AND idempotency_keys.created_at < now() - make_interval(mins => $7))
       RETURNING key`,
      [orgId, key, request.method, request.path, request.hash, windows.ttlHours, windows.abandonedMinutes],
    );
    return claimed.length > 0;
  }

  /** The stored key, or null when there is none. */
  async find(orgId: string, key: string): Promise<IdempotencyKeyRow | null> {
    const rows: IdempotencyKeyRow[] = await this.db.query(
      `SELECT request_hash, state, response_status, response_body FROM idempotency_keys WHERE org_id = $1 AND key = $2`,
      [orgId, key],
    );
    return rows[0] ?? null;
  }

  /** Stores the final response of a claimed key (`body`: the JSON text sent, or its sealed form). */
  async complete(orgId: string, key: string, status: number, body: string): Promise<void> {
    await this.db.query(`UPDATE idempotency_keys SET state = 'completed', response_status = $3, response_body = $4 WHERE org_id = $1 AND key = $2`, [
      orgId,
      key,
      status,
      body,
    ]);
  }

  /** Forgets a key (a retry with it runs the request again). */
  async release(orgId: string, key: string): Promise<void> {
    await this.db.query(`DELETE FROM idempotency_keys WHERE org_id = $1 AND key = $2`, [orgId, key]);
  }

  /** Deletes keys claimed more than `ttlHours` ago. */
  async purgeOlderThan(ttlHours: number): Promise<void> {
    await this.db.query(`DELETE FROM idempotency_keys WHERE created_at < now() - make_interval(hours => $1)`, [ttlHours]);
  }
}

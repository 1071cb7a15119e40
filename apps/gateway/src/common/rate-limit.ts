import { AppError, ErrorCode } from '@kb/common';
import type { Pool } from 'pg';
import { RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';

/** Length of a rate-limit window (decisions.md: fixed one-minute window). */
export const WINDOW_SECONDS = 60;

/** Outcome of one rate-limit check: the values of the `X-RateLimit-*` headers. */
export interface RateLimitState {
  limit: number;
  remaining: number;
  /** Epoch seconds at which the current window ends. */
  reset: number;
  allowed: boolean;
}

/**
 * Fixed one-minute window per API key, shared by every gateway replica through PostgreSQL
 * (table `gateway.rate_limits`), using rate-limiter-flexible's PostgreSQL store. Its consume is
 * one `INSERT … ON CONFLICT DO UPDATE SET points = points + 1 … RETURNING points` statement, so
 * concurrent requests on any replica are counted exactly (the row lock serialises them).
 *
 * rate-limiter-flexible starts a window at a key's first hit; to get windows aligned to the clock
 * minute (the same `X-RateLimit-Reset` on every replica), the window index
 * `floor(now / 60 s)` is part of the store key and the row lives at most one window.
 */
export class RateLimiter {
  private readonly limiters = new Map<number, RateLimiterPostgres>();

  /**
   * @param pool the gateway's PostgreSQL pool (search_path = gateway schema).
   * @param now clock in epoch ms (injectable for tests).
   */
  constructor(
    private readonly pool: Pool,
    private readonly now: () => number = Date.now,
  ) {}

  private limiter(points: number): RateLimiterPostgres {
    let l = this.limiters.get(points);
    if (!l) {
      l = new RateLimiterPostgres({
        storeClient: this.pool,
        storeType: 'pool',
        schemaName: 'gateway',
        tableName: 'rate_limits',
        tableCreated: true, // created by migration GatewayLimits1732200000002
        clearExpiredByTimeout: this.limiters.size === 0, // one cleaner per process is enough
        keyPrefix: '',
        points,
        duration: WINDOW_SECONDS,
      });
      this.limiters.set(points, l);
    }
    return l;
  }

  /**
   * Counts one request of `keyId` (limit `perMinute`) in the current window.
   * @returns the header values; `allowed` false when the window's budget was already used.
   */
  async consume(keyId: string, perMinute: number): Promise<RateLimitState> {
    const nowMs = this.now();
    const window = Math.floor(nowMs / (WINDOW_SECONDS * 1000));
    const reset = (window + 1) * WINDOW_SECONDS;
    let res: RateLimiterRes;
    let allowed = true;
    try {
      res = await this.limiter(perMinute).consume(`${keyId}:${window}`, 1);
    } catch (e) {
      if (!(e instanceof RateLimiterRes)) throw e;
      res = e;
      allowed = false;
    }
    return { limit: perMinute, remaining: allowed ? res.remainingPoints : 0, reset, allowed };
  }

  /** The 429 error for a refused request: wait in seconds in the message (service-api.md §8). */
  static tooMany(state: RateLimitState, nowMs: number): AppError {
    const wait = Math.max(1, state.reset - Math.floor(nowMs / 1000));
    return new AppError(ErrorCode.RATE_LIMITED, `Rate limit of ${state.limit} requests per minute exceeded. Retry in ${wait} seconds.`);
  }
}

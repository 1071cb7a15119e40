import { AppError, ErrorCode, Logger } from '@kb/common';
import { randomUUID } from 'node:crypto';
import type { NatsConnection } from 'nats';
import { RateLimitWindowsRepository, WindowGrant } from './rate-limit.repository';

/** Length of a rate-limit window (decisions.md: fixed one-minute window). */
export const WINDOW_SECONDS = 60;

/** Subject prefix on which a replica is asked to give back its unused leased tokens. */
export const RECLAIM_SUBJECT_PREFIX = 'gateway.ratelimit.reclaim';

/** Outcome of one rate-limit check: the values of the `X-RateLimit-*` headers. */
export interface RateLimitState {
  limit: number;
  remaining: number;
  /** Epoch seconds at which the current window ends. */
  reset: number;
  allowed: boolean;
}

/** Tuning of the lease protocol (defaults suit production; tests may shrink them). */
export interface RateLimiterOptions {
  /** Clock in epoch ms (injectable for tests). */
  now?: () => number;
  /** A lease is at most this fraction of a key's per-minute limit (default 1/20). */
  leaseFraction?: number;
  /** Largest lease, in requests (default 1000). */
  maxLease?: number;
  /** How long a replica waits for another to give its unused tokens back (ms, default 500). */
  reclaimTimeoutMs?: number;
}

/** What one replica knows about one key in the current window. */
interface KeyWindow {
  window: number;
  /** Tokens leased to this replica and not used yet. */
  unused: number;
  /** Tokens granted by the shared table for this window, all replicas together, at the last grant. */
  granted: number;
  /** The window is contended: leases were reclaimed, every grant is now a single token. */
  contended: boolean;
  /** A reclaim completed (every holder answered) and the pool was then empty: refuse locally. */
  exhausted: boolean;
  /** The lease request in flight (one per key and replica). */
  pending?: Promise<void>;
  /** The reclaim in flight: resolves true when every holder answered. */
  reclaiming?: Promise<boolean>;
}

/**
 * Per-key fixed one-minute windows (`floor(now / 60 s)`, the same `X-RateLimit-Reset` on every
 * replica), shared by every gateway replica through the UNLOGGED table `gateway.rate_limit_windows`
 * ({@link RateLimitWindowsRepository}),
 * and exact: no window ever admits more than the limit, and a refusal happens only when the limit
 * has been used (see the one exception below).
 *
 * A database round trip per request would cap the gateway far below its framework's throughput
 * (docs/gateway.md "Benchmark"), so replicas lease tokens in blocks, the way distributed quota
 * systems do (e.g. Google's Doorman, YouTube's quota servers):
 * - A grant is one atomic statement: `granted += least(want, limit - granted)`. A replica asks for
 *   `want = max(1, min(maxLease, floor(limit × leaseFraction)))` tokens and serves requests from
 *   them in memory; `want = 1` (limits under 40/min by default) is a plain per-request counter.
 * - When the pool is empty while other replicas still hold leases (`holders`), the refused replica
 *   marks the window contended, asks each holder over NATS (request/reply on
 *   `gateway.ratelimit.reclaim.<replica>`) to give its unused tokens back, then retries. Once
 *   contended, a window grants one token at a time, so the last tokens go exactly where requests
 *   arrive. A holder finishes its own lease request in flight before answering, so a grant made
 *   before the window became contended is returned too.
 * - The exception: a holder that died or did not answer within `reclaimTimeoutMs` keeps its unused
 *   tokens until the window ends: that window admits fewer than the limit, never more.
 * - `X-RateLimit-Remaining` is the limit minus the tokens granted to all replicas plus this
 *   replica's unused ones: exact with one replica, a lower bound with several.
 *
 * rate-limiter-flexible's PostgreSQL store, used before, cannot grant part of a request ("up to n
 * points"): its consume is all-or-nothing and counts refused points, which leases need.
 */
export class RateLimiter {
  readonly replicaId = randomUUID();
  private readonly windows = new Map<string, KeyWindow>();
  private readonly now: () => number;
  private readonly leaseFraction: number;
  private readonly maxLease: number;
  private readonly reclaimTimeoutMs: number;
  private sweeper?: NodeJS.Timeout;

  /**
   * @param windows the shared table of windows (the gateway's database).
   * @param nats connection for the reclaim protocol; without it leases are never reclaimed.
   */
  constructor(
    private readonly windowsTable: RateLimitWindowsRepository,
    private readonly nats: NatsConnection | undefined,
    private readonly logger: Logger,
    options: RateLimiterOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.leaseFraction = options.leaseFraction ?? 1 / 20;
    this.maxLease = options.maxLease ?? 1000;
    this.reclaimTimeoutMs = options.reclaimTimeoutMs ?? 500;
  }

  /**
   * Answers reclaim requests of other replicas and sweeps finished windows (memory and table).
   * Call once; `stop` undoes it.
   */
  start(): void {
    if (this.nats) {
      const sub = this.nats.subscribe(`${RECLAIM_SUBJECT_PREFIX}.${this.replicaId}`);
      void (async () => {
        for await (const msg of sub) {
          try {
            const { keyId, window } = JSON.parse(Buffer.from(msg.data).toString('utf8')) as { keyId: string; window: number };
            const returned = await this.giveBack(keyId, window);
            msg.respond(Buffer.from(JSON.stringify({ returned })));
          } catch (err) {
            this.logger.warn({ err }, 'rate limit: could not answer a reclaim request');
          }
        }
      })();
    }
    this.sweeper = setInterval(() => void this.sweep().catch(() => undefined), WINDOW_SECONDS * 1000);
    this.sweeper.unref();
  }

  /** Stops the sweeper (the NATS subscription ends with the connection). */
  stop(): void {
    clearInterval(this.sweeper);
  }

  /**
   * Counts one request of `keyId` (limit `perMinute`) in the current window.
   * @returns the header values; `allowed` false when the window's budget was already used.
   * @throws when PostgreSQL cannot be reached (the caller answers 503).
   */
  async consume(keyId: string, perMinute: number): Promise<RateLimitState> {
    const window = Math.floor(this.now() / (WINDOW_SECONDS * 1000));
    const reset = (window + 1) * WINDOW_SECONDS;
    let s = this.windows.get(keyId);
    if (!s || s.window !== window) {
      s = { window, unused: 0, granted: 0, contended: false, exhausted: false };
      this.windows.set(keyId, s);
    }
    const allowed = (): RateLimitState => ({ limit: perMinute, remaining: Math.max(0, perMinute - s.granted) + s.unused, reset, allowed: true });
    const refused: RateLimitState = { limit: perMinute, remaining: 0, reset, allowed: false };
    const want = Math.max(1, Math.min(this.maxLease, Math.floor(perMinute * this.leaseFraction)));
    for (;;) {
      if (s.unused > 0) {
        s.unused--;
        return allowed();
      }
      if (s.exhausted) return refused;
      if (s.pending) {
        await s.pending;
        continue;
      }
      if (want === 1 || s.contended) {
        // One token for this request: concurrent requests grant in parallel.
        const g = await this.grant(keyId, window, perMinute, 1);
        s.granted = Math.max(s.granted, g.total);
        s.contended ||= g.contended;
        if (g.granted === 1) return allowed();
      } else {
        let empty = false;
        s.pending = this.grant(keyId, window, perMinute, want).then((g) => {
          s.unused += g.granted;
          s.granted = Math.max(s.granted, g.total);
          s.contended ||= g.contended;
          empty = g.granted === 0;
        });
        try {
          await s.pending;
        } finally {
          s.pending = undefined;
        }
        if (!empty) continue;
      }
      // The pool is empty: take back what other replicas hold unused, then one last try.
      if (s.reclaiming === undefined) s.reclaiming = this.reclaim(keyId, window);
      const complete = await s.reclaiming;
      s.contended = true;
      const g = await this.grant(keyId, window, perMinute, 1);
      s.granted = Math.max(s.granted, g.total);
      if (g.granted === 1) return allowed();
      if (complete) s.exhausted = true;
      return refused;
    }
  }

  /** One atomic grant of up to `want` tokens (one token once the window is contended). */
  private grant(keyId: string, window: number, limit: number, want: number): Promise<WindowGrant> {
    return this.windowsTable.grant(keyId, window, want, limit, this.replicaId);
  }

  /**
   * Marks the window contended and asks every other holder to give its unused tokens back.
   * @returns true when every holder answered (the pool can then only shrink in this window).
   */
  private async reclaim(keyId: string, window: number): Promise<boolean> {
    const holders = await this.windowsTable.contend(keyId, window, this.replicaId);
    if (holders.length === 0) return true;
    if (!this.nats) return false;
    const payload = Buffer.from(JSON.stringify({ keyId, window }));
    const answers = await Promise.allSettled(
      holders.map((h) => this.nats!.request(`${RECLAIM_SUBJECT_PREFIX}.${h}`, payload, { timeout: this.reclaimTimeoutMs })),
    );
    const missing = answers.filter((a) => a.status === 'rejected').length;
    if (missing > 0)
      this.logger.warn({ key_id: keyId, missing }, 'rate limit: replicas holding leased tokens did not answer; their tokens stay unused this window');
    return missing === 0;
  }

  /** A holder's side of a reclaim: returns its unused tokens of `keyId` in `window` to the pool. */
  private async giveBack(keyId: string, window: number): Promise<number> {
    const s = this.windows.get(keyId);
    let returned = 0;
    if (s && s.window === window) {
      s.contended = true;
      while (s.pending) await s.pending; // a lease granted before the window became contended
      returned = s.unused;
      s.unused = 0;
      s.granted -= returned;
    }
    await this.windowsTable.giveBack(keyId, window, returned, this.replicaId);
    return returned;
  }

  /** Forgets windows that have ended (this replica's memory, and the shared table). */
  private async sweep(): Promise<void> {
    const window = Math.floor(this.now() / (WINDOW_SECONDS * 1000));
    for (const [k, s] of this.windows) if (s.window < window) this.windows.delete(k);
    await this.windowsTable.deleteBefore(window - 1);
  }

  /** The 429 error for a refused request: wait in seconds in the message (service-api.md §8). */
  static tooMany(state: RateLimitState, nowMs: number): AppError {
    const wait = Math.max(1, state.reset - Math.floor(nowMs / 1000));
    return new AppError(ErrorCode.RATE_LIMITED, `Rate limit of ${state.limit} requests per minute exceeded. Retry in ${wait} seconds.`);
  }
}

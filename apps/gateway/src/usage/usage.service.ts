import { AppError, ErrorCode, Logger, NatsConnection, runConsumer } from '@kb/common';
import { TokensRecordedEvent, USAGE_STREAM, UsageSubjects } from '@kb/events';
import type { Principal } from '../accounts/accounts.service';
import { UsageRepository } from './usage.repository';

/** Source of the current time (injected so tests can cross a month boundary). */
export type Clock = () => Date;
export const systemClock: Clock = () => new Date();

/** First day (UTC) of the quota month containing `at`, as `YYYY-MM-01` (quotas reset on the 1st, 00:00 UTC). */
export function quotaMonth(at: Date): string {
  return `${at.getUTCFullYear()}-${String(at.getUTCMonth() + 1).padStart(2, '0')}-01`;
}

/** Epoch seconds of the next quota reset after `at` (the 1st of the next month, 00:00 UTC). */
export function nextQuotaReset(at: Date): number {
  return Math.floor(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1) / 1000);
}

/** Usage of one organization in one quota month. */
export interface MonthlyUsage {
  month: string;
  requests: number;
  tokens: number;
}

/**
 * Monthly quotas per organization (decisions.md "Quotas"): a request cap and a token cap, counted
 * in `gateway.usage_monthly` (one row per org and month, so the reset on the 1st at 00:00 UTC is a
 * new row, nothing to clear) through {@link UsageRepository}, whose every counter change is one
 * atomic SQL statement, so replicas and concurrent requests never over- or under-count.
 */
export class UsageService {
  /** Requests of organizations without any cap, counted in memory: `org|month` → count. */
  private readonly pending = new Map<string, number>();
  private flushTimer: NodeJS.Timeout | undefined;

  /**
   * @param flushMs how often requests of uncapped organizations are written (ms); their counter is
   *   informational (it becomes binding when a cap is set), so it is batched off the hot path.
   */
  constructor(
    private readonly repository: UsageRepository,
    private readonly clock: Clock = systemClock,
    private readonly flushMs = 1000,
  ) {}

  /** Writes the batched request counts of uncapped organizations (one upsert per org and month). */
  async flush(): Promise<void> {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    const batch = [...this.pending];
    this.pending.clear();
    for (const [k, n] of batch) {
      const [orgId, month] = k.split('|');
      await this.repository.addRequests(orgId, month, n).catch(() => this.pending.set(k, (this.pending.get(k) ?? 0) + n));
    }
  }

  /**
   * Counts one authenticated request against the organization's monthly request cap and checks the
   * token cap. The increment happens only when both caps still leave room (one conditional upsert),
   * so a refused request is not counted. Organizations without any cap are counted in memory and
   * written in batches every `flushMs` (nothing to enforce, no database round trip per request).
   * @throws AppError QUOTA_EXCEEDED (402) naming the cap and the reset date.
   */
  async admitRequest(principal: Pick<Principal, 'orgId' | 'monthlyRequestQuota' | 'monthlyTokenQuota'>): Promise<void> {
    const now = this.clock();
    const month = quotaMonth(now);
    const reqCap = principal.monthlyRequestQuota;
    const tokCap = principal.monthlyTokenQuota;
    if (reqCap === null && tokCap === null) {
      // No cap to enforce: count without a database round trip on the request path.
      const k = `${principal.orgId}|${month}`;
      this.pending.set(k, (this.pending.get(k) ?? 0) + 1);
      this.flushTimer ??= setTimeout(() => void this.flush(), this.flushMs).unref();
      return;
    }
    if (reqCap !== 0 && tokCap !== 0 && (await this.repository.countRequestWithin(principal.orgId, month, reqCap, tokCap))) return;
    const usage = await this.usage(principal.orgId, now);
    const reset = new Date(nextQuotaReset(now) * 1000).toISOString();
    if (reqCap !== null && usage.requests >= reqCap) {
      throw new AppError(ErrorCode.QUOTA_EXCEEDED, `Monthly request quota of ${reqCap} requests exceeded; it resets at ${reset}.`);
    }
    throw new AppError(ErrorCode.QUOTA_EXCEEDED, `Monthly token quota of ${tokCap} tokens exceeded (${usage.tokens} used); it resets at ${reset}.`);
  }

  /** Requests and tokens counted for the organization in the month containing `at` (default now). */
  async usage(orgId: string, at: Date = this.clock()): Promise<MonthlyUsage> {
    const month = quotaMonth(at);
    return { month, ...(await this.repository.find(orgId, month)) };
  }

  /**
   * Adds the tokens of one `usage.tokens.recorded` event to its organization's counter for the
   * month of `event.at`. Idempotent: the event id is recorded in the same transaction, so a
   * redelivered event is counted once.
   * @returns false when the event had already been counted.
   */
  async recordTokens(event: TokensRecordedEvent): Promise<boolean> {
    const at = new Date(event.at);
    const when = Number.isNaN(at.getTime()) ? this.clock() : at;
    const tokens = Math.max(0, Math.floor(Number(event.totalTokens) || 0));
    return this.repository.addTokensOnce({ id: event.id, orgId: event.orgId, tokens, at: when }, quotaMonth(when));
  }

  /** Deletes de-duplication records older than 7 days (the usage stream's retention). */
  async purgeOldEvents(): Promise<void> {
    await this.repository.purgeOldEvents();
  }
}

/** Durable consumer name of the gateway on the usage stream (shared by all replicas). */
export const USAGE_CONSUMER = 'gateway-usage';

/**
 * Runs the gateway's durable JetStream consumer of `usage.tokens.recorded`: each event adds its
 * tokens to the organization's monthly counter (at-least-once delivery, counted once by event id).
 * Events with an invalid payload are acknowledged and logged (retrying cannot fix them).
 */
export function consumeTokenUsage(nc: NatsConnection, usage: UsageService, logger: Logger) {
  return runConsumer<TokensRecordedEvent>(nc, {
    stream: USAGE_STREAM,
    durable: USAGE_CONSUMER,
    filterSubject: UsageSubjects.tokensRecorded,
    maxDeliver: 10,
    concurrency: 4,
    logger,
    handler: async (event) => {
      if (!event || typeof event.id !== 'string' || typeof event.orgId !== 'string' || !/^[0-9a-f-]{36}$/i.test(event.id)) {
        logger.warn({ event }, 'ignoring malformed usage event');
        return;
      }
      await usage.recordTokens(event);
    },
  });
}

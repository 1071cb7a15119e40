import { Logger } from '@kb/common';
import { SecretBox } from '../endpoints/secrets';
import { ClaimedDelivery, WebhooksRepository } from '../endpoints/webhooks.repository';
import { AttemptResult, sendWebhook } from './sender';

/** Delivery settings (README configuration table, docs/webhooks.md "Retries"). */
export interface DispatcherConfig {
  /** WEBHOOK_TIMEOUT_MS: one attempt's limit; a 2xx must arrive within it (10 s by decisions.md). */
  timeoutMs: number;
  /** WEBHOOK_RETRY_BASE_MS: delay after the first failed attempt; doubles after each failure. */
  retryBaseMs: number;
  /** WEBHOOK_RETRY_MAX_DELAY_MS: the longest delay between two attempts. */
  retryMaxDelayMs: number;
  /** WEBHOOK_CONCURRENCY: attempts in flight at once in this process. */
  concurrency: number;
  /** WEBHOOK_POLL_INTERVAL_MS: how often due retries are looked for when nothing wakes the dispatcher. */
  pollIntervalMs: number;
  /** WEBHOOK_ALLOW_PRIVATE. */
  allowPrivate: boolean;
}

/**
 * Delay (ms) before attempt n+1 after the n-th failed attempt (n ≥ 1): exponential backoff,
 * `base × 2^(n−1)`, capped at `max` (the schedule shape of the Standard Webhooks guidance, e.g.
 * 5 s, 10 s, 20 s … up to 1 h with the defaults). Retries go on until the delivery's retry window
 * (24 h by default) has passed, so the last attempt is at least 24 h after the first.
 */
export function retryDelayMs(failedAttempts: number, base: number, max: number): number {
  return Math.min(max, base * 2 ** Math.min(Math.max(failedAttempts - 1, 0), 40));
}

/**
 * Sends due deliveries from the `webhook_deliveries` table, in every replica: claims the oldest
 * pending delivery of each (endpoint, resource) that is due (a lease of timeout + 5 s, so a killed
 * worker's attempt is taken over by another once it expires), sends it, records the outcome and
 * schedules the retry. At least once: a delivery is marked `succeeded` only after its 2xx.
 * `wake()` makes it look at once (new deliveries, manual retry); otherwise it sleeps until the
 * next due time or `pollIntervalMs`, whichever is sooner.
 */
export class Dispatcher {
  private inFlight = 0;
  private stopped = false;
  private timer: NodeJS.Timeout | null = null;
  private looking: Promise<void> | null = null;
  private again = false;
  private readonly running = new Set<Promise<void>>();

  constructor(
    private readonly repository: WebhooksRepository,
    private readonly secrets: SecretBox,
    private readonly config: DispatcherConfig,
    private readonly logger: Logger,
    private readonly observe?: (d: ClaimedDelivery, result: AttemptResult, outcome: 'succeeded' | 'retry' | 'failed') => void,
  ) {}

  get leaseMs(): number {
    return this.config.timeoutMs + 5000;
  }

  start(): void {
    this.wake();
  }

  /** Looks for due deliveries now. */
  wake(): void {
    if (this.stopped) return;
    if (this.looking) {
      this.again = true;
      return;
    }
    this.looking = this.look()
      .catch((err) => this.logger.warn({ err }, 'webhook dispatcher could not claim deliveries; retrying'))
      .finally(() => {
        this.looking = null;
        if (this.again) {
          this.again = false;
          this.wake();
        } else this.schedule();
      });
  }

  private schedule(): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.wake(), this.config.pollIntervalMs);
  }

  private async look(): Promise<void> {
    while (!this.stopped) {
      const free = this.config.concurrency - this.inFlight;
      if (free <= 0) return; // a finishing attempt wakes the dispatcher
      const claimed = await this.repository.claimDue(free, this.leaseMs);
      for (const d of claimed) this.launch(d);
      if (claimed.length < free) return;
    }
  }

  private launch(d: ClaimedDelivery): void {
    this.inFlight++;
    const p = this.attempt(d)
      .catch((err) => this.logger.error({ err, delivery_id: d.id }, 'webhook attempt could not be recorded; the lease will expire and it is retried'))
      .finally(() => {
        this.inFlight--;
        this.running.delete(p);
        this.wake(); // the next delivery of the same resource may be due now
      });
    this.running.add(p);
  }

  private async attempt(d: ClaimedDelivery): Promise<void> {
    let result: AttemptResult;
    try {
      result = await sendWebhook({
        url: d.url,
        secret: this.secrets.open(d.secret_ciphertext),
        eventId: d.event_id,
        body: JSON.stringify(d.payload),
        timeoutMs: this.config.timeoutMs,
        allowPrivate: this.config.allowPrivate,
      });
    } catch (err) {
      result = { ok: false, responseStatus: null, error: `could not send: ${(err as Error).message}` };
    }
    if (result.ok) {
      await this.repository.recordAttempt(d.id, { status: 'succeeded', responseStatus: result.responseStatus, error: null, nextAttemptAt: null });
      this.observe?.(d, result, 'succeeded');
      return;
    }
    const next = new Date(Date.now() + retryDelayMs(d.attempts, this.config.retryBaseMs, this.config.retryMaxDelayMs));
    const windowOver = Date.now() >= new Date(d.give_up_at).getTime();
    await this.repository.recordAttempt(d.id, {
      status: windowOver ? 'failed' : 'pending',
      responseStatus: result.responseStatus,
      error: result.error,
      nextAttemptAt: windowOver ? null : next,
    });
    this.observe?.(d, result, windowOver ? 'failed' : 'retry');
    this.logger.info(
      {
        delivery_id: d.id,
        endpoint_id: d.endpoint_id,
        event: d.event_type,
        attempt: d.attempts,
        error: result.error,
        next_attempt_at: windowOver ? null : next,
      },
      windowOver ? 'webhook delivery failed for good (retry window over)' : 'webhook attempt failed; will retry',
    );
  }

  /** Stops claiming and waits for attempts in flight. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.looking;
    await Promise.allSettled([...this.running]);
  }
}

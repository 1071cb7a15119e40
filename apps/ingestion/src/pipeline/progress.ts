import type { Logger } from '@kb/common';
import type { DocumentProgress, ProgressStage } from '@kb/events';

/** Least time between two progress events of one document (ms): a stage is shown within about this long. */
export const PROGRESS_MIN_INTERVAL_MS = 1000;

/**
 * Throttled progress of one document's processing (decisions.md "Document processing progress":
 * updated at least every 5 seconds of work). `report()` is cheap and synchronous; the latest state
 * is published at most once per `minIntervalMs` (a report inside the interval is published when
 * the interval ends, unless a newer one replaces it), so a page-by-page OCR of 200 pages sends
 * about one event a second, and a small document finished within the first interval sends none
 * (its stages show through its status events). Publishing is serialized (events leave in report
 * order); a failed publish is logged and dropped: progress is advisory, the status events are not.
 */
export class ProgressReporter {
  private latest: DocumentProgress & { at: Date };
  private lastSent: DocumentProgress | null = null;
  private lastSentAt: number;
  private timer: NodeJS.Timeout | null = null;
  private chain: Promise<void> = Promise.resolve();
  private closed = false;

  /**
   * @param publish sends one progress state with the time it was reached.
   * @param options `minIntervalMs` (default {@link PROGRESS_MIN_INTERVAL_MS}); `now` for the clock.
   *   The interval counts from construction: the documents service shows `extracting` from the
   *   moment processing was requested.
   */
  constructor(
    private readonly publish: (progress: DocumentProgress, at: Date) => Promise<void>,
    private readonly logger: Pick<Logger, 'warn'>,
    private readonly options: { minIntervalMs?: number; now?: () => number } = {},
  ) {
    this.lastSentAt = this.now();
    this.latest = { stage: 'extracting', pagesDone: null, pagesTotal: null, at: new Date(this.lastSentAt) };
  }

  /** The last reported state. */
  current(): DocumentProgress {
    const { stage, pagesDone, pagesTotal } = this.latest;
    return { stage, pagesDone, pagesTotal };
  }

  /** Records that `stage` is running with these page counts (null where not counted). */
  report(stage: ProgressStage, pagesDone: number | null = null, pagesTotal: number | null = null): void {
    if (this.closed) return;
    this.latest = { stage, pagesDone, pagesTotal, at: new Date(this.now()) };
    if (this.timer) return; // the pending flush sends the latest state
    const wait = this.lastSentAt + this.interval() - this.now();
    if (wait <= 0) this.flush();
    else {
      this.timer = setTimeout(() => this.flush(), wait);
      this.timer.unref?.();
    }
  }

  /**
   * Stops reporting (before the final status event): a pending flush is dropped and the
   * publishes already started are awaited.
   */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.chain;
  }

  private flush(): void {
    this.timer = null;
    if (this.closed) return;
    const { at, ...progress } = this.latest;
    if (this.lastSent && sameProgress(this.lastSent, progress)) return;
    this.lastSent = progress;
    this.lastSentAt = this.now();
    this.chain = this.chain.then(() => this.publish(progress, at).catch((err) => this.logger.warn({ err }, 'could not publish document progress')));
  }

  private interval(): number {
    return this.options.minIntervalMs ?? PROGRESS_MIN_INTERVAL_MS;
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }
}

function sameProgress(a: DocumentProgress, b: DocumentProgress): boolean {
  return a.stage === b.stage && a.pagesDone === b.pagesDone && a.pagesTotal === b.pagesTotal;
}

/**
 * Longest wait for enrichment behind documents not yet ready (ms): about what a 2-core replica needs
 * to make a few hundred text PDFs searchable (docs/ingestion.md "Throughput and scaling").
 */
export const READY_FIRST_MAX_WAIT_MS = 60_000;

/**
 * How long no document must be before `ready` for enrichment to start (ms). When the documents in
 * flight become ready together, the consumer's next messages arrive a few tens of ms later
 * (measured: 60-70 ms in `bench:ingest`); without this pause enrichment started in that gap and the
 * next documents' extraction waited seconds behind it (13 text PDFs ready in 9.6 s instead of ~4 s).
 */
export const READY_FIRST_SETTLE_MS = 250;

/**
 * "Searchable first": counts the documents of this replica that are not yet `ready` (downloading,
 * extracting, chunking, indexing) and lets enrichment (word boxes, deferred OCR, dense embeddings)
 * wait until there are none. Enrichment is the heavy part (the embedding model alone takes most of
 * a core for minutes on a bulk upload), so without it a folder of documents becomes searchable at
 * the pace of the embedding model competing for the CPU; with it every document of the upload is
 * `ready` first, then enrichment runs with the CPU to itself. A priority, not a lock: a document
 * that arrives once enrichment has started is extracted beside it, and a document waits at most
 * `maxWaitMs`, so a steady stream of uploads cannot hold enrichment back for ever.
 */
export class ReadyFirstGate {
  private before = 0;
  private waiters: (() => void)[] = [];
  private settling: NodeJS.Timeout | null = null;

  /** Counts one document as before `ready`; the returned function uncounts it (once, later calls do nothing). */
  enter(): () => void {
    this.before++;
    if (this.settling) clearTimeout(this.settling);
    this.settling = null;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.before--;
      if (this.before > 0) return;
      this.settling = setTimeout(() => {
        this.settling = null;
        if (this.before > 0) return;
        const waiting = this.waiters;
        this.waiters = [];
        for (const start of waiting) start();
      }, this.settleMs);
      this.settling.unref?.();
    };
  }

  /**
   * @param maxWaitMs longest wait of one document, in ms (default {@link READY_FIRST_MAX_WAIT_MS}).
   * @param settleMs how long no document must be before `ready` for waiters to start (default {@link READY_FIRST_SETTLE_MS}).
   */
  constructor(
    private readonly maxWaitMs = READY_FIRST_MAX_WAIT_MS,
    private readonly settleMs = READY_FIRST_SETTLE_MS,
  ) {}

  /**
   * Resolves once no document has been before `ready` for `settleMs` (at once when none is and none
   * just left), or after `maxWaitMs`.
   */
  idle(): Promise<void> {
    if (this.before === 0 && !this.settling) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const start = () => {
        clearTimeout(timer);
        this.waiters = this.waiters.filter((w) => w !== start);
        resolve();
      };
      const timer = setTimeout(start, this.maxWaitMs);
      timer.unref?.();
      this.waiters.push(start);
    });
  }

  /** Documents before `ready` now (for tests and logs). */
  pending(): number {
    return this.before;
  }
}

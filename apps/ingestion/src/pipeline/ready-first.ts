/**
 * Longest wait for enrichment behind documents not yet ready (ms): about what a 2-core replica needs
 * to make a few hundred text PDFs searchable (docs/ingestion.md "Throughput and scaling").
 */
export const READY_FIRST_MAX_WAIT_MS = 60_000;

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

  /** Counts one document as before `ready`; the returned function uncounts it (once, later calls do nothing). */
  enter(): () => void {
    this.before++;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.before--;
      if (this.before === 0) {
        const waiting = this.waiters;
        this.waiters = [];
        for (const start of waiting) start();
      }
    };
  }

  /** @param maxWaitMs longest wait of one document, in ms (default {@link READY_FIRST_MAX_WAIT_MS}). */
  constructor(private readonly maxWaitMs = READY_FIRST_MAX_WAIT_MS) {}

  /** Resolves once no document is before `ready` (at once when none is), or after `maxWaitMs`. */
  idle(): Promise<void> {
    if (this.before === 0) return Promise.resolve();
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

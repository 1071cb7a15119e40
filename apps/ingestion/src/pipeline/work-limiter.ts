/**
 * A weighted first-in-first-out semaphore: `run(weight, fn)` waits until `weight` units of the
 * capacity are free, runs `fn`, then frees them. Calls start in arrival order (a heavy call at the
 * head is never overtaken by light ones, so it cannot starve). A weight above the capacity is
 * clamped to it (such a call runs alone), a weight below 1 counts as 1.
 *
 * The ingestion service uses two: documents in flight weighted by their size in bytes (bounds
 * memory), and CPU-bound extraction (text extraction, chunking, OCR) weighted 1 per document.
 */
export class WorkLimiter {
  private used = 0;
  private readonly waiting: { weight: number; start: () => void }[] = [];

  /** @throws RangeError unless `capacity` is a positive finite number. */
  constructor(readonly capacity: number) {
    if (!(Number.isFinite(capacity) && capacity > 0)) throw new RangeError('capacity must be a positive number');
  }

  /** Runs `fn` holding `weight` units; resolves or rejects with `fn`'s outcome. */
  async run<T>(weight: number, fn: () => Promise<T>): Promise<T> {
    const w = Math.min(this.capacity, Math.max(1, Number.isFinite(weight) ? weight : this.capacity));
    if (this.waiting.length > 0 || this.used + w > this.capacity) {
      await new Promise<void>((start) => this.waiting.push({ weight: w, start }));
    } else {
      this.used += w;
    }
    try {
      return await fn();
    } finally {
      this.used -= w;
      this.startWaiting();
    }
  }

  /** Units in use now (for tests and metrics). */
  inUse(): number {
    return this.used;
  }

  private startWaiting(): void {
    while (this.waiting.length > 0 && this.used + this.waiting[0].weight <= this.capacity) {
      const next = this.waiting.shift()!;
      this.used += next.weight;
      next.start();
    }
  }
}

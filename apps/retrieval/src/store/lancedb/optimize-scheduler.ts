/**
 * When the LanceDB chunk store optimizes: the debounced, adaptive timer armed by each write
 * ({@link DEFAULT_OPTIMIZE_DELAY_MS}, {@link MAX_INDEX_LAG_MS}, {@link OPTIMIZE_COST_FACTOR}),
 * the retry of an optimize preempted by a concurrent write ({@link MAX_OPTIMIZE_CONFLICTS}), the
 * one-at-a-time maintenance queue, and the marks of what was written since the last optimize.
 * What an optimize does to the tables is the store's ({@link OptimizeHooks.optimize}).
 */
import { wrapEngineCall } from '../store-input';
import { CHUNKS_TABLE } from './schema';

/**
 * Default quiet period (ms): the `optimize()` that folds written rows into the FTS index runs this
 * long after the LAST write (a debounce), so a burst of writes shares one optimize; under
 * continuous writes it runs at the latest {@link MAX_INDEX_LAG_MS} after the first unindexed
 * write. Until then the rows are already searchable: LanceDB 0.37.1 searches rows not yet in the
 * index with a flat (exhaustive) BM25 scan and merges them with the indexed results, so the delay
 * costs only search latency, growing with the rows and fragments written in that window
 * (measured: ~470 unindexed rows in 100 fragments next to 20k indexed rows raise p50 from ~4 to
 * ~30 ms).
 */
export const DEFAULT_OPTIMIZE_DELAY_MS = 1000;

/**
 * Longest time (ms) rows wait for the FTS index under continuous writes (see
 * {@link DEFAULT_OPTIMIZE_DELAY_MS}; at least the adaptive gap of {@link OPTIMIZE_COST_FACTOR}).
 * Measured with `npm run bench:index` style loads (2,000 SciFact abstracts, 8 calls in flight,
 * 2 cores): optimizing ~1 s after each write, as before, halved indexing throughput (56 vs 122
 * documents/s without any optimize), because each optimize is O(table) and then held the write
 * queue (it now runs beside it, but still takes CPU).
 */
export const MAX_INDEX_LAG_MS = 10_000;

/**
 * The optimize delay is at least this many times the duration of the previous optimize, so
 * optimization takes at most ~1/(1+factor) of the time under continuous writes. An optimize
 * no longer holds the write queue (see {@link LanceDbChunkStore}), but it competes for the same
 * CPU cores: on 0.37.1 its FTS index update is O(table) (measured ~150-500 ms at 20k chunks).
 */
export const OPTIMIZE_COST_FACTOR = 4;

/** Upper bound (ms) of the adaptive optimize delay. */
export const MAX_OPTIMIZE_DELAY_MS = 60_000;

/**
 * An optimize runs beside writes (LanceDB's MVCC). A write that deletes or updates rows of the
 * fragments an optimize is compacting makes the optimize's commit fail with Lance's "Retryable
 * commit conflict" (the write wins; measured on 0.37.1: `add`, `delete` and `mergeInsert` are
 * never blocked and retry themselves when the compaction commits first). The optimize is then
 * retried at once; after this many preempted attempts in a row, the next attempt runs inside the
 * write queue, so the index makes progress even under a continuous stream of replaces (writes
 * wait for that one attempt only).
 */
export const MAX_OPTIMIZE_CONFLICTS = 3;

/** Minimal structured logger (pino-compatible: `logger.warn(obj, msg)`). */
export interface ChunkStoreLogger {
  warn(obj: Record<string, unknown>, msg: string): void;
}

/** Default {@link ChunkStoreLogger}: one JSON line on stderr. */
export const stderrLogger: ChunkStoreLogger = {
  warn(obj, msg) {
    process.stderr.write(`${JSON.stringify({ level: 'warn', msg, ...obj })}\n`);
  },
};

/** What the scheduler needs of the store; `V` is the store's handle of its vectors table. */
export interface OptimizeHooks<V> {
  /**
   * Optimizes the chunks table (when `chunks`) and the vectors table `vectors` (when not null).
   * A rejection leaves what it covered marked as written.
   */
  optimize(chunks: boolean, vectors: V | null): Promise<void>;
  /** The vectors table of the current vector space, or null when none is set. */
  currentVectors(): V | null;
  /** Runs `fn` inside the write queue (the attempt after {@link MAX_OPTIMIZE_CONFLICTS} conflicts). */
  exclusive(fn: () => Promise<void>): Promise<void>;
  /** True once the store is closing: no timer is armed any more and failures are not logged. */
  isClosing(): boolean;
}

/**
 * Schedules and serializes the optimizes of one store (see the module docstring). Errors: those of
 * {@link OptimizeHooks.optimize}, wrapped as `ChunkStoreError` `Internal` by `wrapEngineCall`.
 */
export class OptimizeScheduler<V> {
  /** Maintenance jobs (optimize, and vector space resets waiting for one) run one at a time. */
  private maintenanceTail: Promise<unknown> = Promise.resolve();
  /** Running maintenance jobs, awaited by close() (not counted as readers by version cleanup). */
  private readonly maintenance = new Set<Promise<unknown>>();
  private optimizeTimer: NodeJS.Timeout | undefined;
  /** When the armed optimize timer fires (epoch ms). */
  private optimizeDueAt = 0;
  /** When the oldest write not yet folded into the index was made (epoch ms). */
  private firstUnindexedAt: number | undefined;
  /** Rows were written since the last optimize. */
  private dirty = false;
  /** The vectors table was written since the last optimize (group commit only). */
  private vectorsDirty = false;
  /** Duration of the last optimize (ms), for the adaptive delay. */
  private lastOptimizeMs = 0;
  /** Background optimizes failed in a row (the retry delay doubles with each). */
  private optimizeFailures = 0;

  /**
   * @param optimizeDelayMs quiet period after the latest write, or `false` for no timer (see
   *   `LanceDbChunkStoreOptions.optimizeDelayMs`)
   * @param logger receives failures of background optimizes
   */
  constructor(
    private readonly optimizeDelayMs: number | false,
    private readonly logger: ChunkStoreLogger,
    private readonly hooks: OptimizeHooks<V>,
  ) {}

  /** Rows were found waiting for the index at open (e.g. after a crash): arms the timer for them. */
  markUnindexed(): void {
    this.dirty = true;
    this.scheduleOptimize();
  }

  /** Disarms the optimize timer (an explicit optimize, or close). */
  cancel(): void {
    if (this.optimizeTimer) clearTimeout(this.optimizeTimer);
    this.optimizeTimer = undefined;
  }

  /** What close() waits for: the running maintenance jobs and the queue's tail (none rejects). */
  pending(): Promise<unknown>[] {
    return [...this.maintenance, this.maintenanceTail];
  }

  /** Notes a commit (of the chunks table, or with `vectors` of the vectors table) and arms the optimize timer. */
  markWritten(vectors = false): void {
    if (vectors) this.vectorsDirty = true;
    else this.dirty = true;
    this.firstUnindexedAt ??= Date.now();
    this.scheduleOptimize();
  }

  /**
   * (Re)arms the optimize timer: the adaptive gap after the latest write, but no later than
   * {@link MAX_INDEX_LAG_MS} (or the gap, if longer) after the first write not yet optimized.
   */
  private scheduleOptimize(): void {
    if (this.optimizeDelayMs === false || this.hooks.isClosing()) return;
    const gap = Math.min(MAX_OPTIMIZE_DELAY_MS, Math.max(this.optimizeDelayMs, OPTIMIZE_COST_FACTOR * this.lastOptimizeMs) * 2 ** this.optimizeFailures);
    const now = Date.now();
    const due = Math.min(now + gap, (this.firstUnindexedAt ?? now) + Math.max(MAX_INDEX_LAG_MS, gap));
    if (this.optimizeTimer) {
      if (this.optimizeDueAt === due) return;
      clearTimeout(this.optimizeTimer);
    }
    this.optimizeDueAt = due;
    const delay = Math.max(0, due - now);
    this.optimizeTimer = setTimeout(() => {
      this.optimizeTimer = undefined;
      if (this.hooks.isClosing()) return;
      this.runOptimize().then(
        () => {
          this.optimizeFailures = 0;
        },
        (err: unknown) => {
          if (this.hooks.isClosing()) return;
          this.optimizeFailures = Math.min(this.optimizeFailures + 1, 16);
          this.logger.warn(
            {
              err: err instanceof Error ? err.message : String(err),
              table: CHUNKS_TABLE,
              failures: this.optimizeFailures,
            },
            'chunk store: background optimize failed; will retry; unindexed rows stay searchable by flat scan',
          );
          this.scheduleOptimize();
        },
      );
    }, delay);
    this.optimizeTimer.unref();
  }

  /**
   * One optimize, beside the write queue; on a commit conflict with a concurrent write, again
   * (the attempt after {@link MAX_OPTIMIZE_CONFLICTS} conflicts inside the write queue).
   */
  async runOptimize(): Promise<void> {
    for (let conflicts = 0; ; conflicts++) {
      const exclusive = conflicts >= MAX_OPTIMIZE_CONFLICTS;
      try {
        if (exclusive) await this.hooks.exclusive(() => this.maintain(() => this.optimizeNow()));
        else await this.trackMaintenance(wrapEngineCall('LanceDB', 'optimize', () => this.maintain(() => this.optimizeNow())));
        return;
      } catch (err) {
        if (exclusive || !isCommitConflict(err) || this.hooks.isClosing()) throw err;
      }
    }
  }

  /** Runs `fn` after every queued maintenance job; failures do not block later jobs. */
  maintain<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.maintenanceTail.then(fn);
    this.maintenanceTail = run.catch(() => undefined);
    return run;
  }

  /** Counts `promise` as a running maintenance job until it settles (see {@link pending}). */
  private trackMaintenance<T>(promise: Promise<T>): Promise<T> {
    const settled = promise.then(
      () => undefined,
      () => undefined,
    );
    this.maintenance.add(settled);
    void settled.then(() => this.maintenance.delete(settled));
    return promise;
  }

  /**
   * One optimize pass: takes the marks of what was written (the chunks table; the vectors table
   * when it was written and is still the current one), runs {@link OptimizeHooks.optimize} on it,
   * and puts the marks back when that fails. Times the pass for the adaptive delay.
   */
  private async optimizeNow(): Promise<void> {
    const chunks = this.dirty;
    const vectors = this.vectorsDirty ? this.hooks.currentVectors() : null;
    if (!chunks && !vectors) return;
    this.vectorsDirty = false;
    this.dirty = false;
    const firstUnindexedAt = this.firstUnindexedAt;
    this.firstUnindexedAt = undefined;
    const started = performance.now();
    try {
      await this.hooks.optimize(chunks, vectors);
    } catch (err) {
      this.dirty ||= chunks;
      this.vectorsDirty ||= vectors !== null && vectors === this.hooks.currentVectors();
      this.firstUnindexedAt = Math.min(firstUnindexedAt ?? Date.now(), this.firstUnindexedAt ?? Date.now());
      throw err;
    } finally {
      this.lastOptimizeMs = performance.now() - started;
    }
  }
}

/**
 * True when `err` (or its cause, up to 4 levels) is one of Lance's optimistic-concurrency failures, after which
 * the operation can simply be run again:
 * - `RetryableCommitConflict` ("Retryable commit conflict for version N: This Rewrite transaction was preempted
 *   by concurrent transaction Delete …", lance `conflict_resolver.rs`);
 * - `TooMuchWriteContention` ("Too many concurrent writers. …", lance `error.rs`): the commit lost the race to
 *   other commits more often than Lance's own commit retries allow, as an optimize does under a steady stream of
 *   ingestion writes (seen in `bench:ingest`, issue 33).
 */
export function isCommitConflict(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    if (/commit conflict|preempted by concurrent transaction|too many concurrent writers/i.test(e.message)) return true;
  }
  return false;
}

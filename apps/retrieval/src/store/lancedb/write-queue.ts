/**
 * The LanceDB chunk store's write queue: writes run one at a time in call order (a promise
 * chain), and concurrent `replaceDocumentChunks` / `deleteDocuments` / `upsertVectors` calls are
 * gathered into groups, cut into slices ({@link MAX_GROUP_CALLS}, {@link MAX_GROUP_ROWS}) and
 * handed to a {@link GroupCommitter} as one commit each (one call at a time when a slice fails).
 * It also tracks every call in flight, reads included, for close() and version cleanup. It knows
 * nothing of LanceDB tables: what a commit writes is the committer's.
 */
import { ChunkVector } from '../chunk-store';
import { wrapEngineCall } from '../store-input';
import type { ChunkRow, VectorTableHandle } from './schema';

/**
 * Most chunk rows (replaced documents' new rows, or vectors) folded into one group commit; a
 * single larger document is committed on its own. Bounds the memory and the duration of one
 * commit (10,000 rows of ~1,200 characters ≈ 25 MB of Arrow data), during which later writes wait.
 */
export const MAX_GROUP_ROWS = 10_000;

/** Most write calls folded into one group commit (bounds the size of the SQL predicates built). */
export const MAX_GROUP_CALLS = 2_000;

/** A `replaceDocumentChunks` or `deleteDocuments` call. */
export type ChunkCall = { kind: 'replace'; orgId: string; documentId: string; rows: ChunkRow[] } | { kind: 'delete'; orgId: string; documentIds: string[] };

/** An `upsertVectors` call; `space` is the vectors table it was validated against. */
export interface VectorCall {
  kind: 'vectors';
  orgId: string;
  documentId: string;
  vectors: ChunkVector[];
  space: VectorTableHandle;
}

/** How a waiting call is settled. */
interface Settle {
  resolve(result: number): void;
  reject(error: unknown): void;
}

export type ChunkWrite = ChunkCall & Settle;
export type VectorWrite = VectorCall & Settle;
/** A call waiting for its group commit. */
export type PendingWrite = ChunkWrite | VectorWrite;

/** Rows a pending call writes (counted against {@link MAX_GROUP_ROWS}). */
function rowCount(write: PendingWrite): number {
  return write.kind === 'replace' ? write.rows.length : write.kind === 'vectors' ? write.vectors.length : 0;
}

/** Writes the calls of one slice of a group as one commit, returning each call's result in order. */
export interface GroupCommitter {
  /** `replaceDocumentChunks` / `deleteDocuments` calls, in call order. */
  applyChunkWrites(calls: ChunkWrite[]): Promise<number[]>;
  /** `upsertVectors` calls, in call order. */
  applyVectorWrites(calls: VectorWrite[]): Promise<number[]>;
}

/**
 * Serializes writes, group-commits batched calls and counts calls in flight. Every entry point
 * first calls `assertOpen` (the store's: throws `Unavailable` once the store is closing).
 */
export class WriteQueue {
  private tail: Promise<unknown> = Promise.resolve();
  /** Running and queued calls (settled promise → start time, epoch ms), for close() and version cleanup. */
  private readonly inflight = new Map<Promise<unknown>, number>();
  /** The group accepting new batched writes (its commit job is already queued), if any. */
  private openGroup: PendingWrite[] | null = null;

  constructor(
    private readonly assertOpen: () => void,
    private readonly committer: GroupCommitter,
  ) {}

  /** Settles once every write queued so far has settled (never rejects). */
  idle(): Promise<unknown> {
    return this.tail;
  }

  /** Start times (epoch ms) of the calls running or queued now. */
  callStarts(): IterableIterator<number> {
    return this.inflight.values();
  }

  /** What close() waits for: every call in flight and the queue's tail (none of them rejects). */
  pending(): Promise<unknown>[] {
    return [...this.inflight.keys(), this.tail];
  }

  /**
   * Adds a write to the open group, or opens a group whose commit job joins the write queue now.
   * The job closes the group when it starts, so calls arriving while earlier writes run share
   * one commit, and calls arriving later form the next group: call order is kept.
   */
  enqueue(write: ChunkCall | VectorCall): Promise<number> {
    this.assertOpen();
    const done = new Promise<number>((resolve, reject) => {
      const pending = { ...write, resolve, reject } as PendingWrite;
      if (this.openGroup) {
        this.openGroup.push(pending);
        return;
      }
      const group: PendingWrite[] = [pending];
      this.openGroup = group;
      const run = this.tail.then(() => {
        if (this.openGroup === group) this.openGroup = null;
        return this.commitGroup(group);
      });
      this.tail = run.catch(() => undefined);
      void this.track(run);
    });
    return this.track(done);
  }

  /**
   * Commits a closed group in slices: each slice is a run of consecutive calls of one family
   * (chunk writes, or vector upserts) within {@link MAX_GROUP_CALLS} and {@link MAX_GROUP_ROWS}.
   * Settles every call's promise; never rejects itself.
   */
  private async commitGroup(group: PendingWrite[]): Promise<void> {
    let start = 0;
    while (start < group.length) {
      const vectorsFamily = group[start].kind === 'vectors';
      let end = start;
      let rows = 0;
      while (end < group.length && (group[end].kind === 'vectors') === vectorsFamily && end - start < MAX_GROUP_CALLS) {
        const n = rowCount(group[end]);
        if (end > start && rows + n > MAX_GROUP_ROWS) break;
        rows += n;
        end++;
      }
      const slice = group.slice(start, end);
      start = end;
      await this.commitSlice(slice, vectorsFamily);
    }
  }

  /** One commit for `slice`; when it fails and holds several calls, one commit per call. */
  private async commitSlice(slice: PendingWrite[], vectorsFamily: boolean): Promise<void> {
    const apply = (calls: PendingWrite[]) =>
      wrapEngineCall(
        'LanceDB',
        vectorsFamily ? 'upsertVectors' : calls.length === 1 ? (calls[0].kind === 'replace' ? 'replaceDocumentChunks' : 'deleteDocuments') : 'group commit',
        () => (vectorsFamily ? this.committer.applyVectorWrites(calls as VectorWrite[]) : this.committer.applyChunkWrites(calls as ChunkWrite[])),
      );
    try {
      const results = await apply(slice);
      slice.forEach((call, i) => call.resolve(results[i]));
      return;
    } catch (err) {
      if (slice.length === 1) {
        slice[0].reject(err);
        return;
      }
    }
    for (const call of slice) {
      try {
        call.resolve((await apply([call]))[0]);
      } catch (err) {
        call.reject(err);
      }
    }
  }

  /** Runs `fn` after every queued write; failures do not block later writes. */
  write<T>(op: string, fn: () => Promise<T>): Promise<T> {
    this.assertOpen();
    // Batched calls made after this one must commit after it: close the open group.
    this.openGroup = null;
    const run = this.tail.then(() => wrapEngineCall('LanceDB', op, fn));
    this.tail = run.catch(() => undefined);
    return this.track(run);
  }

  /** Runs the read `fn` now, beside writes, counted as a call in flight. */
  read<T>(op: string, fn: () => Promise<T>): Promise<T> {
    this.assertOpen();
    return this.track(wrapEngineCall('LanceDB', op, fn));
  }

  /** Counts `promise` as a call in flight until it settles (see {@link callStarts}). */
  track<T>(promise: Promise<T>): Promise<T> {
    const settled = promise.then(
      () => undefined,
      () => undefined,
    );
    this.inflight.set(settled, Date.now());
    void settled.then(() => this.inflight.delete(settled));
    return promise;
  }
}

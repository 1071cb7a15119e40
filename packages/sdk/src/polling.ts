// The waits of check runs and batches (waitForCheckRun, waitForBatch): a light read per poll, at
// intervals that double up to a cap, and the full detail (every requirement, every result) once at
// the end. See the README "Waits and their cost".
import { sleep } from './sleep';
import { KbTimeoutError } from './errors';
import type { Page } from './paging';

/** How a wait polls (every field optional). */
export interface PollOptions {
  /** The first interval between two polls, in ms (default 500); each next one is twice the last, up to `maxPollIntervalMs`. */
  pollIntervalMs?: number;
  /** The longest interval between two polls, in ms (default 10 000). */
  maxPollIntervalMs?: number;
  /** Give up after this many ms (default 1 h; the work keeps going on the service). */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** Defaults of {@link PollOptions}. */
export const POLL_DEFAULTS = { pollIntervalMs: 500, maxPollIntervalMs: 10_000, timeoutMs: 3600_000 } as const;

/**
 * The intervals of a wait, in ms: `first`, then doubled each time up to `cap` (0.5, 1, 2, 4, 8, 10,
 * 10… s with the defaults).
 * @throws TypeError when `first` is not > 0 or `cap` is below `first`.
 */
export function* pollIntervals(
  first: number = POLL_DEFAULTS.pollIntervalMs,
  cap: number = POLL_DEFAULTS.maxPollIntervalMs,
): Generator<number, never, undefined> {
  if (!(first > 0)) throw new TypeError(`pollIntervalMs must be a number of ms > 0, not ${first}.`);
  if (!(cap >= first)) throw new TypeError(`maxPollIntervalMs (${cap}) must be at least pollIntervalMs (${first}).`);
  for (let ms = first; ; ms = Math.min(cap, ms * 2)) yield ms;
}

/**
 * Polls until `read()` gives a value `done` accepts, sleeping by {@link pollIntervals} between
 * reads; `onChange` gets each value whose `fingerprint` differs from the last one's.
 * @returns the last value read.
 * @throws KbTimeoutError (`describe(last)` in the message) after `timeoutMs`; what `read` throws; the signal's reason on abort.
 */
export async function pollUntil<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  options: PollOptions & { fingerprint: (value: T) => string; onChange?: (value: T) => void; describe: (value: T) => string },
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? POLL_DEFAULTS.timeoutMs;
  const deadline = Date.now() + timeoutMs;
  const intervals = pollIntervals(options.pollIntervalMs, options.maxPollIntervalMs);
  let last: string | undefined;
  for (;;) {
    const value = await read();
    const fingerprint = options.fingerprint(value);
    if (fingerprint !== last) {
      last = fingerprint;
      options.onChange?.(value);
    }
    if (done(value)) return value;
    const wait = intervals.next().value;
    if (Date.now() + wait > deadline) throw new KbTimeoutError(`${options.describe(value)} after ${timeoutMs} ms.`);
    await sleep(wait, options.signal);
  }
}

/** Items the first look for an item reads (the newest of a newest-first list). */
const FIRST_WINDOW = 50;
/** Items each later poll reads, from where the item was last seen. */
const WINDOW = 20;

/**
 * Finds an item by id in a newest-first list of summaries (check runs, batches), cheaply poll after
 * poll: the first look reads the newest {@link FIRST_WINDOW} (50) items; once found at position p,
 * each next look reads the {@link WINDOW} (20) items from p (newer items only push it down). When it
 * is not there any more (20 newer items between two polls, or one deleted above it), the newest 50
 * are read once more. An item not among them is given up: `find` answers undefined from then on,
 * without a request, and the caller reads the item itself.
 */
export class ListWindow<T extends { id: string }> {
  private position: number | undefined;
  private lost = false;

  /** `fetchPage(offset, limit)`: the page of the list (e.g. GET /api/v2/check/runs?offset=&limit=). */
  constructor(private readonly fetchPage: (offset: number, limit: number) => Promise<Page<T>>) {}

  /**
   * The item `id` as the list shows it, or undefined when it is not among the newest (see the class).
   * @throws what `fetchPage` throws.
   */
  async find(id: string): Promise<T | undefined> {
    if (this.lost) return undefined;
    if (this.position !== undefined) {
      const found = await this.look(id, this.position, WINDOW);
      if (found) return found;
    }
    return (await this.look(id, 0, FIRST_WINDOW)) ?? this.giveUp();
  }

  private giveUp(): undefined {
    this.lost = true;
    this.position = undefined;
    return undefined;
  }

  private async look(id: string, offset: number, limit: number): Promise<T | undefined> {
    const page = await this.fetchPage(offset, limit);
    const index = page.data.findIndex((item) => item.id === id);
    if (index < 0) return undefined;
    this.position = offset + index;
    return page.data[index];
  }
}

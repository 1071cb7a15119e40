import { isCommitConflict, MAX_OPTIMIZE_CONFLICTS, OptimizeScheduler, type OptimizeHooks } from './optimize-scheduler';

// Lance's two optimistic-concurrency errors as their `Display` formats (lance `error.rs`) write them: "Retryable
// commit conflict for version {version}: {source}, {location}" and "Too many concurrent writers. {message},
// {location}" (the details after the fixed words vary by operation and version).
const RETRYABLE =
  'lance error: Retryable commit conflict for version 42: This Rewrite transaction was preempted by concurrent transaction Delete at version 42. Please retry., /home/runner/work/lance/rust/lance/src/io/commit.rs:1020:17';
const CONTENTION = 'lance error: Too many concurrent writers. Failed to commit after 20 retries., /home/runner/work/lance/rust/lance/src/io/commit.rs:1089:5';

/** A store whose optimize fails with `failures` (in order) before it succeeds; counts where each attempt ran. */
function storeFailing(failures: string[]) {
  const attempts: Array<'beside the queue' | 'inside the queue'> = [];
  let inside = false;
  const hooks: OptimizeHooks<string> = {
    optimize: async () => {
      attempts.push(inside ? 'inside the queue' : 'beside the queue');
      const message = failures.shift();
      if (message) throw new Error(message);
    },
    currentVectors: () => null,
    exclusive: async (fn) => {
      inside = true;
      try {
        await fn();
      } finally {
        inside = false;
      }
    },
    isClosing: () => false,
  };
  const scheduler = new OptimizeScheduler(false, { warn: () => undefined }, hooks);
  scheduler.markWritten();
  return { scheduler, attempts };
}

describe('OptimizeScheduler.runOptimize on concurrent writes', () => {
  it.each([
    ['a retryable commit conflict', RETRYABLE],
    ['too many concurrent writers (Lance gave up its own commit retries)', CONTENTION],
  ])('runs the optimize again after %s, and succeeds', async (_what, message) => {
    const { scheduler, attempts } = storeFailing([message]);
    await expect(scheduler.runOptimize()).resolves.toBeUndefined();
    expect(attempts).toEqual(['beside the queue', 'beside the queue']);
  });

  it(`runs the attempt after ${MAX_OPTIMIZE_CONFLICTS} conflicts inside the write queue, where no write can preempt it`, async () => {
    const { scheduler, attempts } = storeFailing([CONTENTION, RETRYABLE, CONTENTION]);
    await scheduler.runOptimize();
    expect(attempts).toEqual(['beside the queue', 'beside the queue', 'beside the queue', 'inside the queue']);
  });

  it('does not retry other failures: they reach the caller as the store error', async () => {
    const { scheduler, attempts } = storeFailing(['lance error: IO error: No space left on device (os error 28)']);
    await expect(scheduler.runOptimize()).rejects.toThrow('LanceDB optimize failed: lance error: IO error: No space left on device');
    expect(attempts).toHaveLength(1);
  });
});

describe('isCommitConflict', () => {
  it('finds the conflict in the cause of a wrapped error', () => {
    expect(isCommitConflict(new Error('LanceDB optimize failed', { cause: new Error(CONTENTION) }))).toBe(true);
    expect(isCommitConflict(new Error('LanceDB optimize failed', { cause: new Error('Not found: table chunks') }))).toBe(false);
    expect(isCommitConflict('Too many concurrent writers')).toBe(false); // not an Error: never retried
  });
});

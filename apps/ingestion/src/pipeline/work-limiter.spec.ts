import { WorkLimiter } from './work-limiter';

/** A task that runs until `finish()` is called, recording when it started. */
function task(log: string[], name: string) {
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  return {
    run: async () => {
      log.push(`start ${name}`);
      await done;
      log.push(`end ${name}`);
    },
    finish: () => finish(),
  };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('WorkLimiter', () => {
  it('runs light calls side by side up to the capacity and starts the rest in arrival order', async () => {
    const limiter = new WorkLimiter(10);
    const log: string[] = [];
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((n) => task(log, n));
    const runs = [limiter.run(4, a.run), limiter.run(4, b.run), limiter.run(8, c.run), limiter.run(1, d.run)];
    await tick();
    // c (8) does not fit beside a and b; d (1) would fit but must not overtake c.
    expect(log).toEqual(['start a', 'start b']);
    expect(limiter.inUse()).toBe(8);
    a.finish();
    await tick();
    expect(log).toEqual(['start a', 'start b', 'end a']);
    b.finish();
    await tick();
    expect(log.slice(3)).toEqual(['end b', 'start c', 'start d']);
    c.finish();
    d.finish();
    await Promise.all(runs);
    expect(limiter.inUse()).toBe(0);
  });

  it('runs a call heavier than the capacity alone, and frees its units when it throws', async () => {
    const limiter = new WorkLimiter(10);
    const log: string[] = [];
    const big = task(log, 'big');
    const small = task(log, 'small');
    const runs = [limiter.run(500, big.run), limiter.run(1, small.run)];
    await tick();
    expect(log).toEqual(['start big']);
    big.finish();
    small.finish();
    await Promise.all(runs);
    await expect(limiter.run(3, () => Promise.reject(new Error('extraction failed')))).rejects.toThrow('extraction failed');
    expect(limiter.inUse()).toBe(0);
  });

  it('rejects a capacity that is not a positive number', () => {
    expect(() => new WorkLimiter(0)).toThrow(RangeError);
    expect(() => new WorkLimiter(Number.NaN)).toThrow(RangeError);
  });
});

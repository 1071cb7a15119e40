/**
 * Runs `work` while a 5 ms timer ticks on the caller's event loop (test helper).
 * @returns `work`'s result, the longest time between two ticks (ms: how long the event loop was held at a stretch)
 *   and the wall time of `work` (ms).
 */
export async function withEventLoopGap<T>(work: () => Promise<T>): Promise<{ result: T; longestGap: number; elapsed: number }> {
  let lastTick = Date.now();
  let longestGap = 0;
  const timer = setInterval(() => {
    const now = Date.now();
    longestGap = Math.max(longestGap, now - lastTick);
    lastTick = now;
  }, 5);
  const started = Date.now();
  try {
    const result = await work();
    return { result, longestGap, elapsed: Date.now() - started };
  } finally {
    clearInterval(timer);
  }
}

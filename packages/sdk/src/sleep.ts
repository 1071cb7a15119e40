// A wait that a signal can cut short: used by the client's retries, the uploads and the waits.

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first (its listener is removed either way). */
export const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => (clearTimeout(timer), reject(signal!.reason));
    const timer = setTimeout(() => (signal?.removeEventListener('abort', onAbort), resolve()), ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });

import type { TokenUsage } from './types';

/**
 * A model provider call that failed for good: after the client's retries (429/5xx/network), on a
 * non-retryable HTTP status (400/401/404…), or because the output could not be used.
 * Services map it to 503 SERVICE_UNAVAILABLE (provider unreachable) or mark a run `failed`.
 */
export class ModelProviderError extends Error {
  override readonly name = 'ModelProviderError';
  constructor(
    message: string,
    /** True when a later attempt might succeed (rate limit, server error, timeout, network). */
    readonly retryable: boolean,
    /** HTTP status of the provider's last answer, when there was one. */
    readonly status: number | null,
    /** `http` (provider answered with an error), `network`, `timeout` or `invalid_output`. */
    readonly code: 'http' | 'network' | 'timeout' | 'invalid_output',
    /** Tokens the failed call(s) still used (`invalid_output`: the answer and its repair), for quota records. */
    readonly usage?: TokenUsage,
  ) {
    super(message);
  }
}

/** True when `error` comes from an aborted `signal` (client disconnect, run stopped), not from the provider. */
export function isAbortError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  return error.name === 'AbortError' || error.name === 'APIUserAbortError' || /aborted/i.test(error.message);
}

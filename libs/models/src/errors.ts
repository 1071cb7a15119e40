import { AppError, ErrorCode } from '@kb/common';
import type { TokenUsage } from './types';

/**
 * A model provider call that failed for good: after the client's retries (429/5xx/network), on a
 * non-retryable HTTP status (400/401/404…), or because the output could not be used.
 * Services map it with {@link providerAppError} (503 SERVICE_UNAVAILABLE, or 504 TIMEOUT) or mark a run `failed`.
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

/** What a service tells its clients when its model provider fails (see {@link providerAppError}). */
export interface ProviderErrorMessages {
  /** Message of the SERVICE_UNAVAILABLE error; a function receives the provider error (to quote its message). */
  unavailable: string | ((error: ModelProviderError) => string);
  /**
   * Message of the TIMEOUT error for a provider that did not answer in time. Absent: a timeout is
   * SERVICE_UNAVAILABLE like any other failure (callers that retry later, e.g. ingestion's embedding).
   */
  timeout?: string;
}

/**
 * The one mapping of a model-provider failure to the service error carried across gRPC (and on to
 * the public API by the gateway): `timeout` → TIMEOUT (when `messages.timeout` is given), anything
 * else → SERVICE_UNAVAILABLE. Any other error (an AppError, a bug) is returned unchanged, so callers
 * can write `.catch((e) => { throw providerAppError(e, messages) })`.
 * @param error whatever the model call threw.
 * @param messages the wording of this service (the model it names, what the client should do).
 */
export function providerAppError(error: unknown, messages: ProviderErrorMessages): unknown {
  if (!(error instanceof ModelProviderError)) return error;
  if (error.code === 'timeout' && messages.timeout !== undefined) return new AppError(ErrorCode.TIMEOUT, messages.timeout);
  return new AppError(ErrorCode.SERVICE_UNAVAILABLE, typeof messages.unavailable === 'function' ? messages.unavailable(error) : messages.unavailable);
}

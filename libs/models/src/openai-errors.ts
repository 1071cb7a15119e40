import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { ModelProviderError } from './errors';

/**
 * Maps an error of the `openai` client (after its own retries) to {@link ModelProviderError}, for both
 * OpenAI-compatible adapters (chat and embeddings): a timeout → `timeout`, no connection → `network`, an HTTP
 * answer → `http` (retryable for 408, 409, 429 and 5xx, and for an answer without a status). An abort by the
 * caller, a ModelProviderError already made, and anything else are returned unchanged.
 * @param provider how messages name the provider: "model provider", "embeddings provider".
 * @returns the error to throw.
 */
export function providerErrorOf(error: unknown, provider: string): unknown {
  if (error instanceof APIUserAbortError || error instanceof ModelProviderError) return error;
  if (error instanceof APIConnectionTimeoutError) {
    return new ModelProviderError(`The ${provider} did not answer in time (after retries).`, true, null, 'timeout');
  }
  if (error instanceof APIConnectionError) {
    return new ModelProviderError(`The ${provider} could not be reached (after retries).`, true, null, 'network');
  }
  if (error instanceof APIError) {
    const status = (error.status as number | undefined) ?? null;
    const retryable = status === null || status === 408 || status === 409 || status === 429 || status >= 500;
    const detail = typeof error.message === 'string' ? error.message.slice(0, 300) : '';
    return new ModelProviderError(`The ${provider} answered with HTTP ${status ?? 'error'}: ${detail}`, retryable, status, 'http');
  }
  return error;
}

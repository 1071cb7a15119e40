/**
 * One way to show an API failure: the envelope's message with its code and request id (what a
 * person quotes to an operator), or the error's own message for anything else.
 */
import { KbApiError } from '@kb-platform/sdk/browser';

/** A one-line description of an error for an Alert or a notification. */
export function describeError(error: unknown): string {
  if (error instanceof KbApiError) {
    const id = error.request_id ? ` (request ${error.request_id})` : '';
    return `${error.message} [${error.code}]${id}`;
  }
  return error instanceof Error ? error.message : String(error);
}

/**
 * An error answered by the service (its error envelope `{ success: false, error: { code, message },
 * request_id }`), or by a chat stream's `error` event.
 *
 * - `status`: the HTTP status (200 for an `error` event inside a stream that had begun).
 * - `code`: the envelope's `error.code` (`VALIDATION_ERROR`, `NOT_FOUND`, `RATE_LIMITED`, …; see the
 *   API reference); `HTTP_<status>` when the body was not an envelope (a proxy's page, say).
 * - `request_id`: the request id to quote to an operator (also in the `X-Request-Id` header).
 * - `retryAfterSeconds`: the `Retry-After` header of a 429, when present.
 */
export class KbApiError extends Error {
  override readonly name = 'KbApiError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly request_id: string | null,
    readonly retryAfterSeconds: number | null = null,
  ) {
    super(message);
  }

  /** Builds the error from a non-2xx response (reads its body). */
  static async fromResponse(response: Response): Promise<KbApiError> {
    const text = await response.text().catch(() => '');
    let body: { error?: { code?: unknown; message?: unknown }; request_id?: unknown } | undefined;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    return KbApiError.fromBody(response, body, text);
  }

  /** Builds the error from a response whose body was already parsed (`body`), or its raw `text`. */
  static fromBody(response: Response, body: unknown, text = ''): KbApiError {
    const envelope = (body ?? {}) as { error?: { code?: unknown; message?: unknown }; request_id?: unknown };
    const code = typeof envelope.error?.code === 'string' ? envelope.error.code : `HTTP_${response.status}`;
    const message =
      typeof envelope.error?.message === 'string' ? envelope.error.message : `${response.status} ${response.statusText}${text ? `: ${text.slice(0, 200)}` : ''}`;
    const requestId = typeof envelope.request_id === 'string' ? envelope.request_id : response.headers.get('x-request-id');
    return new KbApiError(response.status, code, message, requestId, retryAfterSeconds(response.headers));
  }
}

/** A helper gave up waiting (`waitForDocuments`, `runCheck`, `waitForBatch` past their `timeoutMs`). */
export class KbTimeoutError extends Error {
  override readonly name = 'KbTimeoutError';
}

/** Seconds of a `Retry-After` header (delta-seconds or an HTTP date), or null. RFC 9110 §10.2.3. */
export function retryAfterSeconds(headers: Headers): number | null {
  const value = headers.get('retry-after');
  if (!value) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

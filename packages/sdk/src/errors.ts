/**
 * An error answered by the service (its error envelope `{ success: false, error: { code, message },
 * request_id }`), or by a chat stream's `error` event. {@link KbApiError.fromBody} returns the
 * subclass of the envelope's code (table below), so `catch (e) { if (e instanceof KbRateLimitError) … }`
 * works, and every subclass is still a `KbApiError`.
 *
 * - `status`: the HTTP status (200 for an `error` event inside a stream that had begun).
 * - `code`: the envelope's `error.code` (`VALIDATION_ERROR`, `NOT_FOUND`, `RATE_LIMITED`, …; see the
 *   API reference); `HTTP_<status>` when the body was not an envelope (a proxy's page, say).
 * - `requestId` (also `request_id`): the request id to quote to an operator (also in the `X-Request-Id` header).
 * - `retryAfter` (also `retryAfterSeconds`): seconds of the `Retry-After` header (429, 503), when present.
 */
export class KbApiError extends Error {
  override readonly name: string = 'KbApiError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly request_id: string | null,
    readonly retryAfterSeconds: number | null = null,
  ) {
    super(message);
  }

  /** The request id (the envelope's `request_id`, else the `X-Request-Id` header), or null. */
  get requestId(): string | null {
    return this.request_id;
  }

  /** Seconds the service asked to wait before trying again (`Retry-After`), or null. */
  get retryAfter(): number | null {
    return this.retryAfterSeconds;
  }

  /**
   * The error for `code` (its subclass by {@link ERROR_CLASS_BY_CODE}; for a `HTTP_<status>` code,
   * the class of that status when the service uses it, e.g. 504 → {@link KbServiceTimeoutError}),
   * else a plain KbApiError (codes added after this SDK, or SDK-side codes like `PROCESSING_FAILED`).
   */
  static of(status: number, code: string, message: string, requestId: string | null, retryAfterSeconds: number | null = null): KbApiError {
    const Class = ERROR_CLASS_BY_CODE[code] ?? (code === `HTTP_${status}` ? ERROR_CLASS_BY_STATUS[status] : undefined) ?? KbApiError;
    return new Class(status, code, message, requestId, retryAfterSeconds);
  }

  /** Builds the error from a non-2xx response (reads its body). */
  static async fromResponse(response: Response): Promise<KbApiError> {
    const text = await response.text().catch(() => '');
    let body: { error?: { code?: unknown; message?: unknown }; request_id?: unknown } | undefined;
    try {
      body = JSON.parse(text) as typeof body;
    } catch {
      body = undefined;
    }
    return KbApiError.fromBody(response, body, text);
  }

  /** Builds the error (of the code's subclass, see {@link KbApiError.of}) from a response whose body was already parsed (`body`), or its raw `text`. */
  static fromBody(response: Response, body: unknown, text = ''): KbApiError {
    const envelope = (body ?? {}) as { error?: { code?: unknown; message?: unknown }; request_id?: unknown };
    const code = typeof envelope.error?.code === 'string' ? envelope.error.code : `HTTP_${response.status}`;
    const message =
      typeof envelope.error?.message === 'string'
        ? envelope.error.message
        : `${response.status} ${response.statusText}${text ? `: ${text.slice(0, 200)}` : ''}`;
    const requestId = typeof envelope.request_id === 'string' ? envelope.request_id : response.headers.get('x-request-id');
    return KbApiError.of(response.status, code, message, requestId, retryAfterSeconds(response.headers));
  }
}

/** 400 `VALIDATION_ERROR`: missing or invalid input (a field, a malformed id, an unknown enum value, a body that is not JSON). */
export class KbValidationError extends KbApiError {
  override readonly name: string = 'KbValidationError';
}
/** 401 `UNAUTHORIZED`: a missing, invalid or revoked API key. */
export class KbAuthenticationError extends KbApiError {
  override readonly name: string = 'KbAuthenticationError';
}
/** 402 `QUOTA_EXCEEDED`: the organization's monthly request or token quota is spent (resets on the 1st, 00:00 UTC). */
export class KbQuotaExceededError extends KbApiError {
  override readonly name: string = 'KbQuotaExceededError';
}
/** 403 `FORBIDDEN`: the resource belongs to another organization (document delete). */
export class KbForbiddenError extends KbApiError {
  override readonly name: string = 'KbForbiddenError';
}
/** 403 `AGENT_NOT_ENABLED`: `chat_type: 'safety'` while the Safety Assistant is not enabled (a {@link KbForbiddenError}). */
export class KbAgentNotEnabledError extends KbForbiddenError {
  override readonly name: string = 'KbAgentNotEnabledError';
}
/** 404 `NOT_FOUND`: unknown resource, one of another organization, an unknown route, or a file not in storage. */
export class KbNotFoundError extends KbApiError {
  override readonly name: string = 'KbNotFoundError';
}
/** 405 `METHOD_NOT_ALLOWED`: the path exists but not with this method; the `Allow` header lists the methods it serves. */
export class KbMethodNotAllowedError extends KbApiError {
  override readonly name: string = 'KbMethodNotAllowedError';
}
/** 409 `CONFLICT`: the resource's state forbids the call (a run already processing, a project with documents, a superseded document). */
export class KbConflictError extends KbApiError {
  override readonly name: string = 'KbConflictError';
}
/** 413 `PAYLOAD_TOO_LARGE`: the request body is over the gateway's limit (10 MB by default). */
export class KbPayloadTooLargeError extends KbApiError {
  override readonly name: string = 'KbPayloadTooLargeError';
}
/** 429 `RATE_LIMITED`: the key's per-minute limit; `retryAfter` says how many seconds to wait (the client already retried, see KbClient). */
export class KbRateLimitError extends KbApiError {
  override readonly name: string = 'KbRateLimitError';
}
/** 500 `INTERNAL_ERROR`: a fault of the service (quote `requestId` to the operator). */
export class KbInternalError extends KbApiError {
  override readonly name: string = 'KbInternalError';
}
/** 503 `SERVICE_UNAVAILABLE`: a backing service is down. */
export class KbServiceUnavailableError extends KbApiError {
  override readonly name: string = 'KbServiceUnavailableError';
}
/** 504 `TIMEOUT`: a backing service did not answer in time (not the client's own `timeoutMs`: that is {@link KbTimeoutError}). */
export class KbServiceTimeoutError extends KbApiError {
  override readonly name: string = 'KbServiceTimeoutError';
}

type ErrorClass = new (status: number, code: string, message: string, requestId: string | null, retryAfterSeconds?: number | null) => KbApiError;

/** The class of each error code of the API (service-api.md §7, decisions.md "More error codes"; libs/common ErrorCode). */
export const ERROR_CLASS_BY_CODE: Readonly<Record<string, ErrorClass>> = {
  VALIDATION_ERROR: KbValidationError,
  UNAUTHORIZED: KbAuthenticationError,
  QUOTA_EXCEEDED: KbQuotaExceededError,
  FORBIDDEN: KbForbiddenError,
  AGENT_NOT_ENABLED: KbAgentNotEnabledError,
  NOT_FOUND: KbNotFoundError,
  METHOD_NOT_ALLOWED: KbMethodNotAllowedError,
  CONFLICT: KbConflictError,
  PAYLOAD_TOO_LARGE: KbPayloadTooLargeError,
  RATE_LIMITED: KbRateLimitError,
  INTERNAL_ERROR: KbInternalError,
  SERVICE_UNAVAILABLE: KbServiceUnavailableError,
  TIMEOUT: KbServiceTimeoutError,
};

/** The class of a status the service uses, for answers that are not an envelope (a proxy's 502 page has none). */
const ERROR_CLASS_BY_STATUS: Readonly<Record<number, ErrorClass>> = {
  400: KbValidationError,
  401: KbAuthenticationError,
  402: KbQuotaExceededError,
  403: KbForbiddenError,
  404: KbNotFoundError,
  405: KbMethodNotAllowedError,
  409: KbConflictError,
  413: KbPayloadTooLargeError,
  429: KbRateLimitError,
  500: KbInternalError,
  503: KbServiceUnavailableError,
  504: KbServiceTimeoutError,
};

/**
 * The SDK gave up waiting: a helper's wait (`waitForDocuments`, `runCheck`, `waitForBatch` past
 * their `timeoutMs`), or a request that got no response within the client's `timeoutMs` on its
 * last attempt.
 */
export class KbTimeoutError extends Error {
  override readonly name: string = 'KbTimeoutError';
}

/** Seconds of a `Retry-After` header (delta-seconds or an HTTP date), or null. RFC 9110 §10.2.3. */
export function retryAfterSeconds(headers: Headers): number | null {
  const value = headers.get('retry-after');
  if (!value) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

/** The service could not be reached (DNS, refused or reset connection, TLS) on the last attempt of a request; `cause` holds the fetch error. */
export class KbConnectionError extends Error {
  override readonly name: string = 'KbConnectionError';
}

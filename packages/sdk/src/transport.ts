import createClient, { type Client } from 'openapi-fetch';
import { KbApiError, KbConnectionError, KbTimeoutError, retryAfterSeconds } from './errors';
import type { paths } from './generated/openapi';
import { sleep } from './sleep';

export { sleep };

/** Settings of a {@link KbClient} (its {@link KbTransport}). */
export interface KbClientOptions {
  /** Base address of the service, e.g. `http://localhost:8080`. Default: `KB_BASE_URL`, else `http://localhost:8080`. */
  baseUrl?: string;
  /** The API key (`kb_…`). Default: `KB_API_KEY`. */
  apiKey?: string;
  /**
   * Retries of one request (default 3) after a 408, 429, 500, 502, 503 or 504, a network error or
   * a timeout (`timeoutMs`): see {@link KbClient}. POSTs carry an `Idempotency-Key` (the same on
   * every retry), so a retried POST is replayed by the service rather than done twice.
   */
  maxRetries?: number;
  /** Longest wait before a retry, in seconds (default 60): a longer `Retry-After` is not waited for and the response (429, 503) is thrown. */
  maxRetryDelaySeconds?: number;
  /**
   * Time one attempt may take until the response's headers arrive, in ms (default 60 000; 0: no
   * limit). An attempt that runs out is retried like a network error; the last one throws
   * {@link KbTimeoutError}. Reading the body is not limited (a chat stream may run longer).
   */
  timeoutMs?: number;
  /** The fetch implementation (default: the global fetch). */
  fetch?: typeof fetch;
}

/** The success body of a response type: its `data` when it is an envelope, else the body itself. */
export type DataOf<T> = T extends { data: infer D } ? D : T;

type FetchResult<T> = { data?: T; error?: unknown; response: Response };

/** An environment variable in Node; undefined in a browser (no `process`). */
const env = (name: string): string | undefined => (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.[name];

/** Statuses retried (with `Retry-After` when the response has one, else backoff): timeouts, rate limits and server faults. */
export const RETRIED_STATUSES: readonly number[] = [408, 429, 500, 502, 503, 504];

/** First backoff step and its ceiling, in ms: a retry waits a random time in [0, min(cap, base × 2^attempt)) ("full jitter"). */
const BACKOFF_BASE_MS = 500;
const BACKOFF_CAP_MS = 30_000;

/**
 * The HTTP layer of {@link KbClient}, without its resource namespaces: what the helper functions (uploads,
 * waits, chat, check runs, batches) need, so they take a `KbTransport` (a `KbClient` is one) and the module
 * that builds the namespaces is not imported by the modules the namespaces call. `api` is the typed
 * openapi-fetch client generated from the OpenAPI document
 * (`kb.api.GET('/api/v2/projects', { params: { query: { limit: 10 } } })`), and `data()` and `page()` unwrap its
 * results (throwing {@link KbApiError} on an error envelope).
 *
 * Every request carries `Authorization: Bearer <apiKey>`; every POST an `Idempotency-Key`
 * (a UUID, unless the caller set one), kept across retries. Each attempt has `timeoutMs` (60 s)
 * to get its response headers. A request is retried at most `maxRetries` (3) times after a 408,
 * 429, 500, 502, 503 or 504, a network error or a timeout: after the response's `Retry-After` when
 * it has one (not longer than `maxRetryDelaySeconds`: the response is returned at once instead),
 * else after a random wait in [0, 0.5 s × 2^attempt) (exponential backoff with full jitter, at
 * most 30 s). A 409 is retried (after 1 s) only when a retried POST finds its first attempt, same
 * `Idempotency-Key`, still in progress. Other statuses are returned at once.
 * @throws Error when no API key is given and `KB_API_KEY` is unset.
 */
export class KbTransport {
  readonly baseUrl: string;
  readonly api: Client<paths, 'application/json'>;
  readonly maxRetries: number;
  readonly maxRetryDelaySeconds: number;
  readonly timeoutMs: number;
  private readonly apiKey: string;
  private readonly baseFetch: typeof fetch;

  constructor(options: KbClientOptions = {}) {
    this.baseUrl = (options.baseUrl ?? env('KB_BASE_URL') ?? 'http://localhost:8080').replace(/\/+$/, '');
    const apiKey = options.apiKey ?? env('KB_API_KEY');
    if (!apiKey) throw new Error('No API key: pass `apiKey` or set KB_API_KEY (keys are created by the operator: `kbctl key create`).');
    this.apiKey = apiKey;
    this.maxRetries = options.maxRetries ?? 3;
    this.maxRetryDelaySeconds = options.maxRetryDelaySeconds ?? 60;
    this.timeoutMs = options.timeoutMs ?? 60_000;
    if (!(this.timeoutMs >= 0)) throw new TypeError(`timeoutMs must be a number of ms >= 0 (0: no limit), not ${options.timeoutMs}.`);
    this.baseFetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.api = createClient<paths, 'application/json'>({
      baseUrl: this.baseUrl,
      headers: { Authorization: `Bearer ${this.apiKey}` },
      fetch: (request: Request) => this.send(request),
    });
  }

  /**
   * Sends one request with the retry and timeout policy of the class (used by `api`, and by `raw`
   * for the operations whose body is not JSON: the chat stream and the CSV export).
   * @returns the response of the last attempt, whatever its status.
   * @throws KbConnectionError "Cannot reach <origin>: <cause>" when the service cannot be reached after the retries.
   * @throws KbTimeoutError when the last attempt got no response within `timeoutMs`.
   * @throws the signal's reason when the caller's `signal` aborts.
   */
  async send(request: Request): Promise<Response> {
    if (!request.headers.has('authorization')) request.headers.set('Authorization', `Bearer ${this.apiKey}`);
    if (request.method === 'POST' && !request.headers.has('idempotency-key')) request.headers.set('Idempotency-Key', globalThis.crypto.randomUUID());
    const origin = new URL(request.url).origin;
    for (let attempt = 0; ; attempt++) {
      if (request.signal.aborted) throw request.signal.reason;
      // The attempt's own signal: aborted by the caller's signal (for as long as the response is
      // read) or, until the headers are in, by the timeout. The abort is also raced against the
      // fetch, as Node's fetch can lose an abort that follows a chain of derived signals after a
      // garbage collection (nodejs/node#55428).
      const attemptAbort = new AbortController();
      const onCallerAbort = () => attemptAbort.abort(request.signal.reason);
      request.signal.addEventListener('abort', onCallerAbort, { once: true });
      const timer =
        this.timeoutMs > 0
          ? setTimeout(() => attemptAbort.abort(new KbTimeoutError(`No response from ${origin} within ${this.timeoutMs} ms.`)), this.timeoutMs)
          : undefined;
      const aborted = new Promise<never>((_, reject) =>
        attemptAbort.signal.addEventListener('abort', () => reject(attemptAbort.signal.reason), { once: true }),
      );
      aborted.catch(() => undefined);
      // A copy per attempt: a body can be read once.
      const pending = this.baseFetch(new Request(request.clone(), { signal: attemptAbort.signal }));
      let response: Response;
      try {
        response = await Promise.race([pending, aborted]);
      } catch (error) {
        request.signal.removeEventListener('abort', onCallerAbort);
        pending.then(
          (late) => late.body?.cancel(),
          () => undefined,
        );
        if (request.signal.aborted) throw request.signal.reason;
        const timedOut = attemptAbort.signal.aborted;
        if (attempt >= this.maxRetries) {
          const tries = attempt === 0 ? '' : ` (${attempt + 1} attempts)`;
          if (timedOut) throw new KbTimeoutError(`No response from ${origin} within ${this.timeoutMs} ms${tries}.`, { cause: error });
          const cause = (error as { cause?: { code?: string; message?: string } }).cause;
          throw new KbConnectionError(`Cannot reach ${origin}: ${cause?.code ?? cause?.message ?? (error as Error).message}`, { cause: error });
        }
        await sleep(this.backoffMs(attempt), request.signal);
        continue;
      } finally {
        clearTimeout(timer);
      }
      if (attempt >= this.maxRetries) return response;
      let waitMs: number | null = null;
      if (RETRIED_STATUSES.includes(response.status)) {
        const seconds = retryAfterSeconds(response.headers);
        if (seconds === null) waitMs = this.backoffMs(attempt);
        else if (seconds <= this.maxRetryDelaySeconds) waitMs = seconds * 1000;
      } else if (response.status === 409 && attempt > 0 && request.method === 'POST') {
        // A retry of ours found the first attempt (same Idempotency-Key) still running: wait for it.
        const body = (await response
          .clone()
          .json()
          .catch(() => null)) as { error?: { message?: string } } | null;
        if (/in progress|still running|in flight/i.test(body?.error?.message ?? '')) waitMs = 1000;
      }
      if (waitMs === null) return response;
      request.signal.removeEventListener('abort', onCallerAbort);
      await response.body?.cancel().catch(() => undefined);
      await sleep(waitMs, request.signal);
    }
  }

  /** The wait before retry number `attempt + 1` without a `Retry-After`: full jitter over min(30 s, 0.5 s × 2^attempt). */
  private backoffMs(attempt: number): number {
    return Math.random() * Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** attempt);
  }

  /** A request with the client's auth and retries, to a path under the base URL (`/api/v2/…`). */
  raw(path: string, init: RequestInit = {}): Promise<Response> {
    return this.send(new Request(`${this.baseUrl}${path}`, init));
  }

  /**
   * The `data` of a successful `api` call.
   * @throws KbApiError with the envelope's code, the status and the request id on an error response.
   */
  async data<T>(call: Promise<FetchResult<T>>): Promise<DataOf<T>> {
    const { data, error, response } = await call;
    if (error !== undefined || !response.ok) throw KbApiError.fromBody(response, error);
    if (response.status === 204 || data === undefined) return undefined as DataOf<T>;
    return (data as { data?: unknown }).data !== undefined ? ((data as { data: unknown }).data as DataOf<T>) : (data as DataOf<T>);
  }

  /**
   * The `data` and `pagination` of a successful list call.
   * @throws KbApiError on an error response.
   */
  async page<T>(call: Promise<FetchResult<T>>): Promise<{ data: DataOf<T>; pagination: { limit: number; offset: number; total: number } }> {
    const { data, error, response } = await call;
    if (error !== undefined || !response.ok) throw KbApiError.fromBody(response, error);
    const body = data as { data: DataOf<T>; pagination: { limit: number; offset: number; total: number } };
    return { data: body.data, pagination: body.pagination };
  }
}

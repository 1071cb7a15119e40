import createClient, { type Client } from 'openapi-fetch';
import { KbApiError, retryAfterSeconds } from './errors';
import type { paths } from './generated/openapi';

/** Settings of a {@link KbClient}. */
export interface KbClientOptions {
  /** Base address of the service, e.g. `http://localhost:8080`. Default: `KB_BASE_URL`, else `http://localhost:8080`. */
  baseUrl?: string;
  /** The API key (`kb_…`). Default: `KB_API_KEY`. */
  apiKey?: string;
  /**
   * Retries of one request (default 3) after a 429 (waits `Retry-After`), a 503, or a network
   * error. POSTs carry an `Idempotency-Key` (the same on every retry), so a retried POST is
   * replayed by the service rather than done twice.
   */
  maxRetries?: number;
  /** Longest wait before a retry, in seconds (default 60): a longer `Retry-After` is not waited for and the 429 is thrown. */
  maxRetryDelaySeconds?: number;
  /** The fetch implementation (default: the global fetch). */
  fetch?: typeof fetch;
}

/** The success body of a response type: its `data` when it is an envelope, else the body itself. */
export type DataOf<T> = T extends { data: infer D } ? D : T;

type FetchResult<T> = { data?: T; error?: unknown; response: Response };

/** An environment variable in Node; undefined in a browser (no `process`). */
const env = (name: string): string | undefined => (typeof process === 'undefined' ? undefined : process.env?.[name]);

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(timer), reject(signal.reason)), { once: true });
  });

/**
 * The client of the service: `api` is the typed openapi-fetch client generated from the OpenAPI
 * document (`kb.api.GET('/api/v2/projects', { params: { query: { limit: 10 } } })`), `data()` and
 * `page()` unwrap its results (throwing {@link KbApiError} on an error envelope). The helpers
 * (uploads, waits, chat, check runs, batches) are in the other modules and take a client.
 *
 * Every request carries `Authorization: Bearer <apiKey>`; every POST an `Idempotency-Key`
 * (a UUID, unless the caller set one), kept across retries. 429 is retried after `Retry-After`,
 * 503 and network errors after 0.5 s, 1 s, 2 s … (at most `maxRetries` times).
 * @throws Error when no API key is given and `KB_API_KEY` is unset.
 */
export class KbClient {
  readonly baseUrl: string;
  readonly api: Client<paths, 'application/json'>;
  readonly maxRetries: number;
  readonly maxRetryDelaySeconds: number;
  private readonly apiKey: string;
  private readonly baseFetch: typeof fetch;

  constructor(options: KbClientOptions = {}) {
    this.baseUrl = (options.baseUrl ?? env('KB_BASE_URL') ?? 'http://localhost:8080').replace(/\/+$/, '');
    const apiKey = options.apiKey ?? env('KB_API_KEY');
    if (!apiKey) throw new Error('No API key: pass `apiKey` or set KB_API_KEY (keys are created by the operator: `kbctl key create`).');
    this.apiKey = apiKey;
    this.maxRetries = options.maxRetries ?? 3;
    this.maxRetryDelaySeconds = options.maxRetryDelaySeconds ?? 60;
    this.baseFetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.api = createClient<paths, 'application/json'>({
      baseUrl: this.baseUrl,
      headers: { Authorization: `Bearer ${this.apiKey}` },
      fetch: (request: Request) => this.send(request),
    });
  }

  /**
   * Sends one request with the retry policy of the class (used by `api`, and by `raw` for the
   * operations whose body is not JSON: the chat stream and the CSV export).
   * @returns the response of the last attempt, whatever its status.
   * @throws Error "Cannot reach <origin>: <cause>" when the service cannot be reached after the retries.
   */
  async send(request: Request): Promise<Response> {
    if (!request.headers.has('authorization')) request.headers.set('Authorization', `Bearer ${this.apiKey}`);
    if (request.method === 'POST' && !request.headers.has('idempotency-key')) request.headers.set('Idempotency-Key', globalThis.crypto.randomUUID());
    for (let attempt = 0; ; attempt++) {
      let response: Response;
      try {
        response = await this.baseFetch(request.clone());
      } catch (error) {
        if (request.signal.aborted) throw error;
        if (attempt >= this.maxRetries) {
          const cause = (error as { cause?: { code?: string; message?: string } }).cause;
          throw new Error(`Cannot reach ${new URL(request.url).origin}: ${cause?.code ?? cause?.message ?? (error as Error).message}`, { cause: error });
        }
        await sleep(500 * 2 ** attempt, request.signal);
        continue;
      }
      if (attempt >= this.maxRetries) return response;
      let waitMs: number | null = null;
      if (response.status === 429) {
        const seconds = retryAfterSeconds(response.headers) ?? 1;
        if (seconds <= this.maxRetryDelaySeconds) waitMs = seconds * 1000;
      } else if (response.status === 503) {
        waitMs = 500 * 2 ** attempt;
      } else if (response.status === 409 && attempt > 0 && request.method === 'POST') {
        // A retry of ours found the first attempt (same Idempotency-Key) still running: wait for it.
        const body = (await response.clone().json().catch(() => null)) as { error?: { message?: string } } | null;
        if (/in progress|still running|in flight/i.test(body?.error?.message ?? '')) waitMs = 1000;
      }
      if (waitMs === null) return response;
      await response.body?.cancel().catch(() => undefined);
      await sleep(waitMs, request.signal);
    }
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

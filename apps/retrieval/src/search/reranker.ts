/**
 * Reranking port: scores (query, passage) pairs with a cross-encoder served over HTTP.
 * {@link HttpReranker} speaks the two common protocols: the Cohere/Jina-style `POST {base}/rerank`
 * with `{ model, query, documents, top_n }` answering `{ results: [{ index, relevance_score }] }`
 * (vLLM, Jina, Cohere-compatible gateways), and Hugging Face TEI's `POST {base}/rerank` with
 * `{ query, texts }` answering `[{ index, score }]`. Selected by `RERANK_PROTOCOL`.
 */
export interface Reranker {
  readonly model: string;
  /** Relevance score per passage, in input order (higher is more relevant). */
  rerank(query: string, passages: string[], signal?: AbortSignal): Promise<number[]>;
}

export interface HttpRerankerOptions {
  /** Base URL; `/rerank` is appended (e.g. `http://localhost:8082/v1` → `…/v1/rerank`). */
  baseUrl: string;
  apiKey?: string;
  model: string;
  protocol: 'cohere' | 'tei';
  timeoutMs: number;
  /** Retries after the first attempt on network errors, 429 and 5xx (backoff 200 ms × 2^n). */
  maxRetries: number;
}

/** {@link Reranker} over an HTTP rerank endpoint (see the module comment for the protocols). */
export class HttpReranker implements Reranker {
  readonly model: string;
  constructor(private readonly options: HttpRerankerOptions) {
    this.model = options.model;
  }

  /** @throws Error naming the status when the endpoint fails after retries or answers malformed data. */
  async rerank(query: string, passages: string[], signal?: AbortSignal): Promise<number[]> {
    if (passages.length === 0) return [];
    const url = `${this.options.baseUrl.replace(/\/+$/, '')}/rerank`;
    const body =
      this.options.protocol === 'tei'
        ? { query, texts: passages, raw_scores: false }
        : { model: this.options.model, query, documents: passages, top_n: passages.length };
    let lastError: unknown;
    for (let attempt = 0; attempt <= this.options.maxRetries; attempt++) {
      if (attempt > 0) await new Promise((r) => setTimeout(r, 200 * 2 ** (attempt - 1)));
      try {
        const res = await fetch(url, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', ...(this.options.apiKey ? { Authorization: `Bearer ${this.options.apiKey}` } : {}) },
          body: JSON.stringify(body),
          signal: signal ? AbortSignal.any([signal, AbortSignal.timeout(this.options.timeoutMs)]) : AbortSignal.timeout(this.options.timeoutMs),
        });
        if (res.status === 429 || res.status >= 500) {
          lastError = new Error(`rerank endpoint answered HTTP ${res.status}`);
          continue;
        }
        if (!res.ok) throw new Error(`rerank endpoint answered HTTP ${res.status}`);
        const json = await res.json();
        const items = (Array.isArray(json) ? json : (json as { results?: unknown }).results) as { index: number; score?: number; relevance_score?: number }[];
        if (!Array.isArray(items)) throw new Error('rerank endpoint answered without results');
        const scores = new Array<number>(passages.length).fill(Number.NEGATIVE_INFINITY);
        for (const it of items) {
          const s = it.relevance_score ?? it.score;
          if (Number.isInteger(it.index) && it.index >= 0 && it.index < passages.length && typeof s === 'number') scores[it.index] = s;
        }
        return scores;
      } catch (error) {
        if (signal?.aborted) throw error;
        lastError = error;
        if (error instanceof Error && /HTTP 4\d\d|without results/.test(error.message) && !/HTTP 429/.test(error.message)) throw error;
      }
    }
    throw lastError instanceof Error ? lastError : new Error(String(lastError));
  }
}

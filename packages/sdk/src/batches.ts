import type { KbTransport } from './transport';
import { KbApiError } from './errors';
import type { Page, PageOptions } from './paging';
import { ListWindow, pollUntil, type PollOptions } from './polling';
import type { Batch, BatchDetail, CreateBatch } from './types';

/** Batch statuses after which a batch does not change by itself. */
const FINAL_BATCH = ['completed', 'failed'];

/**
 * Creates a batch of questions answered in the background, status `pending`
 * (POST /api/v2/agent/batches): `questions` 1 to 500 (each 1 to 4,000 characters), `name?`,
 * `project_id?`, `chat_type?`.
 * @returns the batch's summary.
 * @throws KbApiError 400 (invalid batch), 403 AGENT_NOT_ENABLED, 404 (unknown project).
 */
export async function createBatch(kb: KbTransport, batch: CreateBatch, options: { signal?: AbortSignal } = {}): Promise<Batch> {
  return await kb.data(kb.api.POST('/api/v2/agent/batches', { body: batch, signal: options.signal }));
}

/**
 * A batch with `results` (GET /api/v2/agent/batches/{id}): `[{ index, question, status, answer,
 * citations, error }]` in question order.
 * @throws KbApiError 404 (unknown batch or another organization's).
 */
export async function getBatch(kb: KbTransport, id: string, options: { signal?: AbortSignal } = {}): Promise<BatchDetail> {
  return await kb.data(kb.api.GET('/api/v2/agent/batches/{id}', { params: { path: { id } }, signal: options.signal }));
}

/** Filters and paging of {@link listBatches}. */
export interface ListBatchesOptions extends PageOptions {
  projectId?: string;
  status?: Batch['status'];
}

/**
 * One page of the organization's batches, newest first, without their results (GET /api/v2/agent/batches).
 * @throws KbApiError 400 (bad filter).
 */
export async function listBatches(kb: KbTransport, options: ListBatchesOptions = {}): Promise<Page<Batch>> {
  const query = { project_id: options.projectId, status: options.status, limit: options.limit, offset: options.offset };
  return await kb.page(kb.api.GET('/api/v2/agent/batches', { params: { query }, signal: options.signal }));
}

/** Options of {@link waitForBatch}. */
export interface WaitForBatchOptions extends PollOptions {
  /** Called with the batch (its summary: counters and status, no results) each time its status or counters change. */
  onProgress?: (batch: Batch) => void;
}

/**
 * Waits until a batch is `completed` or `failed`, cheaply as {@link waitForCheckRun}: each poll reads
 * the batch's summary from the list (GET /api/v2/agent/batches, a window of 20 to 50 summaries, no
 * results), at intervals of `pollIntervalMs` (0.5 s) doubling up to `maxPollIntervalMs` (10 s); the
 * batch with its results (GET /api/v2/agent/batches/{id}) is read once, at the end. A batch not
 * among the organization's 50 newest is polled by its detail.
 * @returns the batch with its results.
 * @throws KbApiError 404 for an unknown batch; KbTimeoutError after `timeoutMs` (default 1 h); TypeError for bad intervals.
 */
export async function waitForBatch(kb: KbTransport, id: string, options: WaitForBatchOptions = {}): Promise<BatchDetail> {
  const signal = options.signal;
  const window = new ListWindow<Batch>((offset, limit) => listBatches(kb, { offset, limit, signal }));
  let detail: BatchDetail | undefined;
  await pollUntil<Batch>(
    async () => {
      const listed = await window.find(id);
      detail = listed ? undefined : await getBatch(kb, id, { signal });
      return listed ?? detail!;
    },
    (batch) => FINAL_BATCH.includes(batch.status),
    {
      ...options,
      fingerprint: (batch) => JSON.stringify([batch.status, batch.processed_questions, batch.failed_questions]),
      onChange: options.onProgress,
      describe: (batch) => `Batch ${id} still ${batch.status}`,
    },
  );
  return detail ?? getBatch(kb, id, { signal });
}

/**
 * The batch's results as CSV (GET /api/v2/agent/batches/{id}/export: RFC 4180, header
 * `index,question,status,answer,sources,error`), optionally after waiting for the batch to finish
 * (`wait: true`, with the options of {@link waitForBatch}; without it, unfinished rows show their status).
 * @throws KbApiError 404 for an unknown batch.
 */
export async function exportBatch(kb: KbTransport, id: string, options: WaitForBatchOptions & { wait?: boolean } = {}): Promise<string> {
  if (options.wait) await waitForBatch(kb, id, options);
  const response = await kb.raw(`/api/v2/agent/batches/${encodeURIComponent(id)}/export`, { headers: { Accept: 'text/csv' }, signal: options.signal });
  if (!response.ok) throw await KbApiError.fromResponse(response);
  return response.text();
}

import type { KbClient } from './client';
import { KbApiError, KbTimeoutError } from './errors';
import type { BatchDetail } from './types';

/**
 * Polls a batch (GET /api/v2/agent/batches/{id}) until it is `completed` or `failed`;
 * `onProgress` gets it each time its counters change.
 * @throws KbApiError 404 for an unknown batch; KbTimeoutError after `timeoutMs` (default 1 h).
 */
export async function waitForBatch(
  kb: KbClient,
  id: string,
  options: { onProgress?: (batch: BatchDetail) => void; pollIntervalMs?: number; timeoutMs?: number; signal?: AbortSignal } = {},
): Promise<BatchDetail> {
  const deadline = Date.now() + (options.timeoutMs ?? 3600_000);
  let last = '';
  for (;;) {
    const batch = (await kb.data(kb.api.GET('/api/v2/agent/batches/{id}', { params: { path: { id } }, signal: options.signal }))) as BatchDetail;
    const fingerprint = JSON.stringify([batch.status, batch.processed_questions, batch.failed_questions]);
    if (fingerprint !== last) {
      last = fingerprint;
      options.onProgress?.(batch);
    }
    if (['completed', 'failed'].includes(batch.status)) return batch;
    if (Date.now() > deadline) throw new KbTimeoutError(`Batch ${id} still ${batch.status} after ${options.timeoutMs ?? 3600_000} ms.`);
    await new Promise((resolve) => setTimeout(resolve, options.pollIntervalMs ?? 1000));
  }
}

/**
 * The batch's results as CSV (GET /api/v2/agent/batches/{id}/export: RFC 4180, header
 * `index,question,status,answer,sources,error`), optionally after waiting for the batch to finish
 * (`wait: true`; without it, unfinished rows show their status).
 * @throws KbApiError 404 for an unknown batch.
 */
export async function exportBatch(kb: KbClient, id: string, options: { wait?: boolean; signal?: AbortSignal; onProgress?: (batch: BatchDetail) => void } = {}): Promise<string> {
  if (options.wait) await waitForBatch(kb, id, options);
  const response = await kb.raw(`/api/v2/agent/batches/${encodeURIComponent(id)}/export`, { headers: { Accept: 'text/csv' }, signal: options.signal });
  if (!response.ok) throw await KbApiError.fromResponse(response);
  return response.text();
}

import type { KbClient } from './client';
import { KbApiError, KbTimeoutError } from './errors';
import type { CheckRequirement, CheckRun, CheckRunComparison, CheckRunDetail, CreateCheckRun, RerunCheckRun, ReviewRequirement, TriggerCheckRun } from './types';

/** Run statuses after which a run does not change by itself. */
const FINAL_RUN = ['completed', 'stopped', 'failed'];

/**
 * Creates a check run (POST /api/v2/check/runs), triggers it (POST …/trigger) and polls it
 * (GET /api/v2/check/runs/{id}) until it is `completed`, `stopped` or `failed`; `onProgress` gets
 * the run each time its counters change. Requirements may be given as plain strings.
 * @returns the run's detail with every requirement and its sub-requirements.
 * @throws KbApiError (e.g. 404 for an unknown project or handbook); KbTimeoutError after `timeoutMs` (default 1 h; the run keeps going on the service).
 */
export async function runCheck(
  kb: KbClient,
  run: Omit<CreateCheckRun, 'requirements'> & { requirements: Array<string | CreateCheckRun['requirements'][number]> },
  options: { trigger?: Partial<TriggerCheckRun>; onProgress?: (run: CheckRun | CheckRunDetail) => void; pollIntervalMs?: number; timeoutMs?: number; signal?: AbortSignal } = {},
): Promise<CheckRunDetail> {
  const requirements = run.requirements.map((r) => (typeof r === 'string' ? { text: r } : r));
  const created = await kb.data(kb.api.POST('/api/v2/check/runs', { body: { ...run, requirements }, signal: options.signal }));
  options.onProgress?.(created as CheckRun);
  await kb.data(kb.api.POST('/api/v2/check/runs/{id}/trigger', { params: { path: { id: created.id } }, body: options.trigger ?? {}, signal: options.signal }));
  return waitForCheckRun(kb, created.id, options);
}

/**
 * Polls a check run until it is `completed`, `stopped` or `failed` (see {@link runCheck}).
 * @throws KbApiError 404 for an unknown run; KbTimeoutError after `timeoutMs` (default 1 h).
 */
export async function waitForCheckRun(
  kb: KbClient,
  id: string,
  options: { onProgress?: (run: CheckRunDetail) => void; pollIntervalMs?: number; timeoutMs?: number; signal?: AbortSignal } = {},
): Promise<CheckRunDetail> {
  const deadline = Date.now() + (options.timeoutMs ?? 3600_000);
  let last = '';
  for (;;) {
    const detail = (await kb.data(kb.api.GET('/api/v2/check/runs/{id}', { params: { path: { id } }, signal: options.signal }))) as CheckRunDetail;
    const fingerprint = JSON.stringify([detail.status, detail.processed_requirements, detail.passed_requirements, detail.failed_requirements]);
    if (fingerprint !== last) {
      last = fingerprint;
      options.onProgress?.(detail);
    }
    if (FINAL_RUN.includes(detail.status)) return detail;
    if (Date.now() > deadline) throw new KbTimeoutError(`Check run ${id} still ${detail.status} after ${options.timeoutMs ?? 3600_000} ms.`);
    await new Promise((resolve) => setTimeout(resolve, options.pollIntervalMs ?? 1000));
  }
}

/**
 * Records a person's decision on a completed requirement of a run, next to the machine's result
 * (PUT /api/v2/check/runs/{id}/requirements/{requirement_id}/review); replaces an earlier review.
 * `review`: `{ decision: 'pass' | 'fail', reviewer (1 to 200 characters), comment? (at most 2,000) }`.
 * @returns the requirement with its `review` (`outdated` false).
 * @throws KbApiError 400 (invalid review), 404 (unknown run or requirement, or another organization's), 409 (the requirement is not completed).
 */
export async function setRequirementReview(kb: KbClient, runId: string, requirementId: string, review: ReviewRequirement, options: { signal?: AbortSignal } = {}): Promise<CheckRequirement> {
  return kb.data(
    kb.api.PUT('/api/v2/check/runs/{id}/requirements/{requirement_id}/review', { params: { path: { id: runId, requirement_id: requirementId } }, body: review, signal: options.signal }),
  ) as Promise<CheckRequirement>;
}

/**
 * Removes the review of a completed requirement (DELETE …/requirements/{requirement_id}/review);
 * succeeds also when it had none.
 * @throws KbApiError 404 (unknown run or requirement, or another organization's), 409 (the requirement is not completed).
 */
export async function clearRequirementReview(kb: KbClient, runId: string, requirementId: string, options: { signal?: AbortSignal } = {}): Promise<void> {
  await kb.data(kb.api.DELETE('/api/v2/check/runs/{id}/requirements/{requirement_id}/review', { params: { path: { id: runId, requirement_id: requirementId } }, signal: options.signal }));
}

/**
 * Re-runs a check run (POST /api/v2/check/runs/{id}/rerun): a new `pending` run of the same project
 * with the same requirements (text, metadata, order) and `handbook_ids`, its `source_run_id` naming
 * the original. It is not started: trigger it (or use {@link waitForCheckRun} after
 * POST …/trigger) to check it against the knowledge scope as it is now.
 * `rerun.name`: 1 to 500 characters; default: the original's name + " (rerun)".
 * @returns the new run.
 * @throws KbApiError 400 (invalid name), 404 (unknown run or another organization's).
 */
export async function rerunCheckRun(kb: KbClient, id: string, rerun: RerunCheckRun = {}, options: { signal?: AbortSignal } = {}): Promise<CheckRun> {
  return kb.data(kb.api.POST('/api/v2/check/runs/{id}/rerun', { params: { path: { id } }, body: rerun, signal: options.signal })) as Promise<CheckRun>;
}

/**
 * What changed between two runs' machine results (GET /api/v2/check/runs/{id}/compare?with=):
 * `runId` is "before", `withRunId` "after". Requirements are matched by text (then order); `changes`
 * lists those whose result (pass | fail | pending), score band (below / at or above 0.7) or first
 * source changed, and those only in one run (`before` or `after` null); `summary` counts them.
 * @throws KbApiError 400 (an id not a UUID), 404 (either run unknown or another organization's).
 */
export async function compareCheckRuns(kb: KbClient, runId: string, withRunId: string, options: { signal?: AbortSignal } = {}): Promise<CheckRunComparison> {
  return kb.data(
    kb.api.GET('/api/v2/check/runs/{id}/compare', { params: { path: { id: runId }, query: { with: withRunId } }, signal: options.signal }),
  ) as Promise<CheckRunComparison>;
}

/** The formats of a check run's report (GET /api/v2/check/runs/{id}/report?format=). */
export type ReportFormat = 'xlsx' | 'csv' | 'pdf';

/**
 * A check run's report as a file (GET /api/v2/check/runs/{id}/report; decisions.md "Reports"):
 * XLSX (default; a Summary sheet, then one row per requirement), CSV (RFC 4180, header row) or PDF
 * (the summary, then one entry per requirement), each with the machine result, lowest score,
 * review, evidence quotes and sources. Save it as `run-<id>.<format>`.
 * @returns the file's bytes.
 * @throws KbApiError 400 (bad format), 404 (unknown run or another organization's), 409 (the run is pending).
 */
export async function downloadReport(kb: KbClient, runId: string, format: ReportFormat = 'xlsx', options: { signal?: AbortSignal } = {}): Promise<Uint8Array> {
  const response = await kb.raw(`/api/v2/check/runs/${encodeURIComponent(runId)}/report?format=${encodeURIComponent(format)}`, { signal: options.signal });
  if (!response.ok) throw await KbApiError.fromResponse(response);
  return new Uint8Array(await response.arrayBuffer());
}

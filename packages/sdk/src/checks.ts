import type { KbTransport } from './transport';
import { KbApiError } from './errors';
import type { Page, PageOptions } from './paging';
import { ListWindow, pollUntil, type PollOptions } from './polling';
import type {
  CheckRequirement,
  CheckRun,
  CheckRunComparison,
  CheckRunDetail,
  CreateCheckRun,
  RerunCheckRun,
  ReviewRequirement,
  TriggerCheckRun,
  TriggeredRun,
  Verdict,
  VerifyRequirement,
} from './types';

/** Run statuses after which a run does not change by itself. */
const FINAL_RUN = ['completed', 'stopped', 'failed'];

/**
 * Creates a check run, status `pending` (POST /api/v2/check/runs): `requirements` 1 to 1,000
 * items of `{ text (≤ 5,000 characters), metadata? }`; it is not started (see {@link triggerCheckRun}).
 * @throws KbApiError 400 (invalid run), 404 (unknown project or handbook).
 */
export async function createCheckRun(kb: KbTransport, run: CreateCheckRun, options: { signal?: AbortSignal } = {}): Promise<CheckRun> {
  return await kb.data(kb.api.POST('/api/v2/check/runs', { body: run, signal: options.signal }));
}

/**
 * A check run with every requirement and its sub-requirements (GET /api/v2/check/runs/{id}): the
 * largest read of a run (a run of 1,000 requirements is megabytes); the list's summary
 * ({@link listCheckRuns}) has the same counters without the requirements.
 * @throws KbApiError 404 (unknown run or another organization's).
 */
export async function getCheckRun(kb: KbTransport, id: string, options: { signal?: AbortSignal } = {}): Promise<CheckRunDetail> {
  return await kb.data(kb.api.GET('/api/v2/check/runs/{id}', { params: { path: { id } }, signal: options.signal }));
}

/** Filter and paging of {@link listCheckRuns}. */
export interface ListCheckRunsOptions extends PageOptions {
  projectId?: string;
}

/**
 * One page of the organization's check runs, newest first, without their requirements
 * (GET /api/v2/check/runs): counters, `review_summary` and processing timestamps.
 * @throws KbApiError 400 (bad filter).
 */
export async function listCheckRuns(kb: KbTransport, options: ListCheckRunsOptions = {}): Promise<Page<CheckRun>> {
  const query = { project_id: options.projectId, limit: options.limit, offset: options.offset };
  return await kb.page(kb.api.GET('/api/v2/check/runs', { params: { query }, signal: options.signal }));
}

/**
 * Every requirement of a run in order, each with its sub-requirements, `metadata` and `review`
 * (GET /api/v2/check/runs/{id}/requirements; not paginated).
 * @throws KbApiError 404 (unknown run or another organization's).
 */
export async function listCheckRunRequirements(kb: KbTransport, id: string, options: { signal?: AbortSignal } = {}): Promise<CheckRequirement[]> {
  return await kb.data(kb.api.GET('/api/v2/check/runs/{id}/requirements', { params: { path: { id } }, signal: options.signal }));
}

/**
 * Starts checking a run (POST /api/v2/check/runs/{id}/trigger): every requirement not `completed`
 * (all of them with `reprocess: true`); `skip_breakdown: true` gives each requirement one
 * sub-requirement (faster). A run with nothing left to check goes straight to `completed`.
 * @returns `{ run_id, task_id, status }` (`processing`, or `completed`).
 * @throws KbApiError 404 (unknown run), 409 (the run is being processed).
 */
export async function triggerCheckRun(
  kb: KbTransport,
  id: string,
  trigger: TriggerCheckRun = {},
  options: { signal?: AbortSignal } = {},
): Promise<TriggeredRun> {
  return await kb.data(kb.api.POST('/api/v2/check/runs/{id}/trigger', { params: { path: { id } }, body: trigger, signal: options.signal }));
}

/**
 * Stops a run being processed (POST /api/v2/check/runs/{id}/stop): it becomes `stopped`; work in
 * flight is abandoned and those requirements return to `pending` (trigger it to go on).
 * @returns the run (summary).
 * @throws KbApiError 404 (unknown run), 409 (the run is not `processing`).
 */
export async function stopCheckRun(kb: KbTransport, id: string, options: { signal?: AbortSignal } = {}): Promise<CheckRun> {
  return await kb.data(kb.api.POST('/api/v2/check/runs/{id}/stop', { params: { path: { id } }, signal: options.signal }));
}

/**
 * Checks one requirement against a project's documents at once (POST /api/v2/check/verify):
 * `{ project_id, requirement (≤ 5,000 characters), handbook_ids? }`.
 * @returns the verdict with its evidence and sources.
 * @throws KbApiError 400 (invalid request), 404 (unknown project).
 */
export async function verifyRequirement(kb: KbTransport, request: VerifyRequirement, options: { signal?: AbortSignal } = {}): Promise<Verdict> {
  return await kb.data(kb.api.POST('/api/v2/check/verify', { body: request, signal: options.signal }));
}

/** Options of {@link waitForCheckRun} and {@link runCheck}'s wait. */
export interface WaitForCheckRunOptions extends PollOptions {
  /** Called with the run (its summary: counters and status, no requirements) each time its status or counters change. */
  onProgress?: (run: CheckRun) => void;
}

/**
 * Creates a check run (POST /api/v2/check/runs), triggers it (POST …/trigger) and waits for it
 * ({@link waitForCheckRun}) until it is `completed`, `stopped` or `failed`; `onProgress` gets the
 * run each time its counters change. Requirements may be given as plain strings.
 * @returns the run's detail with every requirement and its sub-requirements.
 * @throws KbApiError (e.g. 404 for an unknown project or handbook); KbTimeoutError after `timeoutMs` (default 1 h; the run keeps going on the service).
 */
export async function runCheck(
  kb: KbTransport,
  run: Omit<CreateCheckRun, 'requirements'> & { requirements: Array<string | CreateCheckRun['requirements'][number]> },
  options: WaitForCheckRunOptions & { trigger?: Partial<TriggerCheckRun> } = {},
): Promise<CheckRunDetail> {
  const requirements = run.requirements.map((r) => (typeof r === 'string' ? { text: r } : r));
  const created = await createCheckRun(kb, { ...run, requirements }, options);
  options.onProgress?.(created);
  await triggerCheckRun(kb, created.id, options.trigger ?? {}, options);
  return waitForCheckRun(kb, created.id, options);
}

/**
 * Waits until a check run is `completed`, `stopped` or `failed`, cheaply: each poll reads the run's
 * summary from the list of runs (GET /api/v2/check/runs, newest first, a window of 20 to 50
 * summaries found by {@link ListWindow}: no requirements), at intervals of `pollIntervalMs` (0.5 s)
 * doubling up to `maxPollIntervalMs` (10 s); the full detail (GET /api/v2/check/runs/{id}) is read
 * once, at the end. A run that is not among the organization's 50 newest is polled by its detail.
 * `onProgress` gets the run's summary each time its status or counters change.
 * @returns the run's detail with every requirement and its sub-requirements.
 * @throws KbApiError 404 for an unknown run; KbTimeoutError after `timeoutMs` (default 1 h); TypeError for bad intervals.
 */
export async function waitForCheckRun(kb: KbTransport, id: string, options: WaitForCheckRunOptions = {}): Promise<CheckRunDetail> {
  const signal = options.signal;
  const window = new ListWindow<CheckRun>((offset, limit) => listCheckRuns(kb, { offset, limit, signal }));
  let detail: CheckRunDetail | undefined;
  await pollUntil<CheckRun>(
    async () => {
      const listed = await window.find(id);
      detail = listed ? undefined : await getCheckRun(kb, id, { signal });
      return listed ?? detail!;
    },
    (run) => FINAL_RUN.includes(run.status),
    {
      ...options,
      fingerprint: (run) => JSON.stringify([run.status, run.processed_requirements, run.passed_requirements, run.failed_requirements]),
      onChange: options.onProgress,
      describe: (run) => `Check run ${id} still ${run.status}`,
    },
  );
  return detail ?? getCheckRun(kb, id, { signal });
}

/**
 * Records a person's decision on a completed requirement of a run, next to the machine's result
 * (PUT /api/v2/check/runs/{id}/requirements/{requirement_id}/review); replaces an earlier review.
 * `review`: `{ decision: 'pass' | 'fail', reviewer (1 to 200 characters), comment? (at most 2,000) }`.
 * @returns the requirement with its `review` (`outdated` false).
 * @throws KbApiError 400 (invalid review), 404 (unknown run or requirement, or another organization's), 409 (the requirement is not completed).
 */
export async function setRequirementReview(
  kb: KbTransport,
  runId: string,
  requirementId: string,
  review: ReviewRequirement,
  options: { signal?: AbortSignal } = {},
): Promise<CheckRequirement> {
  return kb.data(
    kb.api.PUT('/api/v2/check/runs/{id}/requirements/{requirement_id}/review', {
      params: { path: { id: runId, requirement_id: requirementId } },
      body: review,
      signal: options.signal,
    }),
  );
}

/**
 * Removes the review of a completed requirement (DELETE …/requirements/{requirement_id}/review);
 * succeeds also when it had none.
 * @throws KbApiError 404 (unknown run or requirement, or another organization's), 409 (the requirement is not completed).
 */
export async function clearRequirementReview(kb: KbTransport, runId: string, requirementId: string, options: { signal?: AbortSignal } = {}): Promise<void> {
  await kb.data(
    kb.api.DELETE('/api/v2/check/runs/{id}/requirements/{requirement_id}/review', {
      params: { path: { id: runId, requirement_id: requirementId } },
      signal: options.signal,
    }),
  );
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
export async function rerunCheckRun(kb: KbTransport, id: string, rerun: RerunCheckRun = {}, options: { signal?: AbortSignal } = {}): Promise<CheckRun> {
  return kb.data(kb.api.POST('/api/v2/check/runs/{id}/rerun', { params: { path: { id } }, body: rerun, signal: options.signal }));
}

/**
 * What changed between two runs' machine results (GET /api/v2/check/runs/{id}/compare?with=):
 * `runId` is "before", `withRunId` "after". Requirements are matched by text (then order); `changes`
 * lists those whose result (pass | fail | pending), score band (below / at or above 0.7) or first
 * source changed, and those only in one run (`before` or `after` null); `summary` counts them.
 * @throws KbApiError 400 (an id not a UUID), 404 (either run unknown or another organization's).
 */
export async function compareCheckRuns(kb: KbTransport, runId: string, withRunId: string, options: { signal?: AbortSignal } = {}): Promise<CheckRunComparison> {
  return kb.data(kb.api.GET('/api/v2/check/runs/{id}/compare', { params: { path: { id: runId }, query: { with: withRunId } }, signal: options.signal }));
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
export async function downloadReport(
  kb: KbTransport,
  runId: string,
  format: ReportFormat = 'xlsx',
  options: { signal?: AbortSignal } = {},
): Promise<Uint8Array> {
  const response = await kb.raw(`/api/v2/check/runs/${encodeURIComponent(runId)}/report?format=${encodeURIComponent(format)}`, { signal: options.signal });
  if (!response.ok) throw await KbApiError.fromResponse(response);
  return new Uint8Array(await response.arrayBuffer());
}

import {
  AppError,
  CallContext,
  ErrorCode,
  isUuid,
  Logger,
  MAX_REQUIREMENTS_PER_RUN,
  REPORT_PAGE_MAX,
  REQUIREMENT_MAX_CHARS,
  REVIEW_COMMENT_MAX_CHARS,
  REVIEWER_MAX_CHARS,
  RUN_NAME_MAX_CHARS,
  charCount,
  sliceChars,
} from '@kb/common';
import { CheckRequirementsRequestedEvent } from '@kb/events';
import { DocumentsClient, requireProject, resolveHandbooks, versionChainRoots } from '@kb/knowledge';
import { compareRequirements, Comparison } from './run-compare';
import { RunsRepository } from './runs.repository';
import type { RequirementWithSubs, RunRow } from './run-rows';

/** Appended to the original's name when a rerun is given none. */
export const RERUN_NAME_SUFFIX = ' (rerun)';

/**
 * The default name of a rerun: the original's name + " (rerun)", the original's name clipped so the
 * whole stays within RUN_NAME_MAX_CHARS characters.
 */
export function defaultRerunName(original: string): string {
  return `${sliceChars(original, RUN_NAME_MAX_CHARS - RERUN_NAME_SUFFIX.length).trimEnd()}${RERUN_NAME_SUFFIX}`;
}

/** A run to create, in domain terms (the gRPC controller decodes `metadata_json`). */
export interface NewRun {
  projectId: string;
  name: string;
  /** Each requirement's text and its client metadata (a JSON object, or null). */
  requirements: { text: string; metadata: Record<string, unknown> | null }[];
  handbookIds: string[];
}

/**
 * Check-run use cases: create, trigger, stop, list, detail, requirements (service-api.md §4 "Check",
 * decisions.md "Check"). Trigger publishes the run's pending requirements as JetStream work items
 * (groups of `groupSize`), processed by RunWorker in any replica.
 */
export class RunsService {
  constructor(
    private readonly deps: {
      repository: RunsRepository;
      documents: DocumentsClient;
      publishWork: (item: CheckRequirementsRequestedEvent, msgId: string) => Promise<void>;
      groupSize: number;
      logger: Logger;
    },
  ) {}

  /**
   * Creates a pending run with its requirements (texts trimmed; duplicate handbook ids once).
   * @throws AppError VALIDATION_ERROR for a bad project id, name, requirement count or text, or
   *   handbook id; NOT_FOUND for an unknown project or handbook.
   */
  async create(ctx: CallContext, req: NewRun): Promise<RunRow> {
    if (!isUuid(req.projectId)) throw AppError.validation('project_id must be a UUID.');
    const name = (req.name ?? '').trim();
    if (!name || charCount(name) > RUN_NAME_MAX_CHARS) throw AppError.validation(`name must be 1 to ${RUN_NAME_MAX_CHARS} characters.`);
    if (req.requirements.length < 1 || req.requirements.length > MAX_REQUIREMENTS_PER_RUN)
      throw AppError.validation(`requirements must have 1 to ${MAX_REQUIREMENTS_PER_RUN} items.`);
    const requirements = req.requirements.map((r, i) => {
      const text = (r.text ?? '').trim();
      if (!text || charCount(r.text) > REQUIREMENT_MAX_CHARS)
        throw AppError.validation(`requirements[${i}].text must be 1 to ${REQUIREMENT_MAX_CHARS} characters.`);
      return { text, metadata: r.metadata };
    });
    for (const id of req.handbookIds) if (!isUuid(id)) throw AppError.validation('handbook_ids must contain only UUIDs.');
    await requireProject(ctx, this.deps.documents, req.projectId);
    const handbookIds = [...new Set(req.handbookIds)];
    const handbooks = await resolveHandbooks(ctx, this.deps.documents, handbookIds);
    const found = new Set(handbooks.map((h) => h.id));
    const missing = handbookIds.find((id) => !found.has(id));
    if (missing) throw AppError.notFound(`Handbook ${missing} not found.`);
    const run = await this.deps.repository.create(ctx.orgId, { projectId: req.projectId, name, handbookIds, requirements }, ctx);
    return run;
  }

  /**
   * Trigger: pending/stopped/failed/completed → processing (or straight to completed when nothing is left),
   * publishing the work items before the transition commits. If they cannot be published (NATS
   * down), the run is left exactly as it was (status, counters, requirements, no audit event) and
   * SERVICE_UNAVAILABLE is returned: "the run was not started", and retrying the trigger is safe.
   * Items published before a failure carry this trigger's generation, which never commits: workers
   * discard them (RunsRepository.claim), or, delivered after a later trigger reached the same
   * generation, check requirements that trigger queued too (a requirement is stored once).
   */
  async trigger(ctx: CallContext, id: string, options: { reprocess: boolean; skipBreakdown: boolean }): Promise<RunRow> {
    if (!isUuid(id)) throw AppError.validation('id must be a UUID.');
    const size = Math.max(1, this.deps.groupSize);
    const queued = Symbol('not queued');
    let queueError: unknown = queued;
    const queue = async ({ run, requirementIds }: { run: RunRow; requirementIds: string[] }) => {
      try {
        for (let i = 0, n = 0; i < requirementIds.length; i += size, n++) {
          const item: CheckRequirementsRequestedEvent = {
            orgId: ctx.orgId,
            runId: run.id,
            generation: run.generation,
            projectId: run.project_id,
            handbookIds: run.handbook_ids ?? [],
            skipBreakdown: run.skip_breakdown,
            requirementIds: requirementIds.slice(i, i + size),
          };
          // The trigger's task id, not its generation: a trigger that failed after publishing some items
          // rolls its generation back, and the next trigger's items (same generation) must not be
          // dropped as duplicates of those within the stream's duplicate window.
          await this.deps.publishWork(item, `check:${run.id}:${run.task_id}:${n}`);
        }
      } catch (err) {
        queueError = err;
        throw err;
      }
    };
    let run: RunRow;
    let requirementIds: string[];
    try {
      ({ run, requirementIds } = await this.deps.repository.trigger(ctx.orgId, id, options, ctx, queue));
    } catch (err) {
      if (queueError === queued || err !== queueError) throw err;
      this.deps.logger.error({ err, run_id: id }, 'could not queue check run work; the run is unchanged');
      throw new AppError(ErrorCode.SERVICE_UNAVAILABLE, 'The work queue is unavailable; the run was not started and is unchanged. Retry shortly.');
    }
    this.deps.logger.info({ run_id: run.id, task_id: run.task_id, requirements: requirementIds.length }, 'check run triggered');
    return run;
  }

  /** Stop: a processing run becomes stopped. @throws AppError NOT_FOUND, CONFLICT (repository rules). */
  async stop(ctx: CallContext, id: string): Promise<RunRow> {
    if (!isUuid(id)) throw AppError.validation('id must be a UUID.');
    return this.deps.repository.stop(ctx.orgId, id, ctx);
  }

  /** Runs of the org (optionally of one project), newest first; `limit`/`offset` already checked (pageWindow). */
  async list(ctx: CallContext, filter: { projectId: string | null; limit: number; offset: number }): Promise<{ runs: RunRow[]; total: number }> {
    if (filter.projectId && !isUuid(filter.projectId)) throw AppError.validation('project_id must be a UUID.');
    const { rows, total } = await this.deps.repository.listRuns(ctx.orgId, filter.projectId || null, filter.limit, filter.offset);
    return { runs: rows, total };
  }

  /** A run with its requirements in order. @throws AppError VALIDATION_ERROR (id), NOT_FOUND. */
  async get(ctx: CallContext, id: string): Promise<{ run: RunRow; requirements: RequirementWithSubs[] }> {
    const run = await this.requireRun(ctx, id);
    return { run, requirements: await this.deps.repository.listRequirements(ctx.orgId, run.id) };
  }

  /** The requirements of a run, in order. @throws AppError VALIDATION_ERROR (id), NOT_FOUND. */
  async requirements(ctx: CallContext, id: string): Promise<RequirementWithSubs[]> {
    const run = await this.requireRun(ctx, id);
    return this.deps.repository.listRequirements(ctx.orgId, run.id);
  }

  /**
   * One page of a run's requirements for its report (decisions.md "Reports"), in order_index order,
   * with the run (counters, review_summary). `offset` ≥ 0, `limit` 1 to REPORT_PAGE_MAX.
   * @throws AppError VALIDATION_ERROR (id, offset, limit), NOT_FOUND (unknown run or another org's),
   *   CONFLICT (the run is pending: nothing has been checked yet).
   */
  async reportPage(ctx: CallContext, id: string, page: { offset: number; limit: number }): Promise<{ run: RunRow; requirements: RequirementWithSubs[] }> {
    if (!Number.isInteger(page.offset) || page.offset < 0) throw AppError.validation('offset must be a non-negative integer.');
    if (!Number.isInteger(page.limit) || page.limit < 1 || page.limit > REPORT_PAGE_MAX) throw AppError.validation(`limit must be 1 to ${REPORT_PAGE_MAX}.`);
    const run = await this.requireRun(ctx, id);
    if (run.status === 'pending') throw AppError.conflict('The check run is pending: trigger it before asking for its report.');
    return { run, requirements: await this.deps.repository.listRequirements(ctx.orgId, run.id, page) };
  }

  /**
   * Sets or replaces the review of a completed requirement (decisions.md "Review of check results"):
   * `decision` pass | fail, `reviewer` 1 to REVIEWER_MAX_CHARS characters (trimmed, not blank),
   * `comment` at most REVIEW_COMMENT_MAX_CHARS characters (trimmed; blank = none).
   * @returns the requirement with its review and sub-requirements.
   * @throws AppError VALIDATION_ERROR (ids, decision, reviewer, comment), NOT_FOUND (run of another
   *   org, unknown run or requirement), CONFLICT (requirement not completed).
   */
  async setReview(
    ctx: CallContext,
    runId: string,
    requirementId: string,
    review: { decision: string; reviewer: string; comment: string | null },
  ): Promise<RequirementWithSubs> {
    this.requireIds(runId, requirementId);
    if (review.decision !== 'pass' && review.decision !== 'fail') throw AppError.validation('decision must be one of: pass, fail.');
    const reviewer = (review.reviewer ?? '').trim();
    if (!reviewer || charCount(review.reviewer) > REVIEWER_MAX_CHARS) throw AppError.validation(`reviewer must be 1 to ${REVIEWER_MAX_CHARS} characters.`);
    if (review.comment !== null && charCount(review.comment) > REVIEW_COMMENT_MAX_CHARS)
      throw AppError.validation(`comment must be at most ${REVIEW_COMMENT_MAX_CHARS} characters.`);
    const comment = review.comment?.trim() || null;
    return this.deps.repository.setReview(ctx.orgId, runId, requirementId, { decision: review.decision, reviewer, comment }, ctx);
  }

  /**
   * Removes the review of a completed requirement; idempotent (no review → nothing changes).
   * @returns whether a review was removed.
   * @throws AppError VALIDATION_ERROR (ids), NOT_FOUND, CONFLICT (requirement not completed).
   */
  async clearReview(ctx: CallContext, runId: string, requirementId: string): Promise<boolean> {
    this.requireIds(runId, requirementId);
    return this.deps.repository.clearReview(ctx.orgId, runId, requirementId, ctx);
  }

  /**
   * Re-runs a run (decisions.md "Re-running and comparing check runs"): a new pending run of the same
   * project with the same requirements and `handbook_ids` (copied as stored), `source_run_id` naming
   * the original. Any run may be re-run, whatever its status. Not triggered: the caller triggers it,
   * and it is then checked against the knowledge scope as it is at that time.
   * @param name 1 to RUN_NAME_MAX_CHARS characters (trimmed); null = {@link defaultRerunName}.
   * @throws AppError VALIDATION_ERROR (id, name), NOT_FOUND (unknown run or another org's, or its project gone).
   */
  async rerun(ctx: CallContext, id: string, name: string | null): Promise<RunRow> {
    const source = await this.requireRun(ctx, id);
    let runName: string;
    if (name === null) runName = defaultRerunName(source.name);
    else {
      runName = name.trim();
      if (!runName || charCount(name) > RUN_NAME_MAX_CHARS) throw AppError.validation(`name must be 1 to ${RUN_NAME_MAX_CHARS} characters.`);
    }
    await requireProject(ctx, this.deps.documents, source.project_id);
    const run = await this.deps.repository.rerun(ctx.orgId, source.id, runName, ctx);
    this.deps.logger.info({ run_id: run.id, source_run_id: source.id }, 'check run re-run created');
    return run;
  }

  /**
   * Compares the machine results of two runs of the org (any projects, any statuses): `id` is
   * "before", `withId` "after". See compareRequirements for matching and what counts as a change;
   * the first sources' documents are read from the documents service to know their version chains.
   * @returns the comparison with both run ids.
   * @throws AppError VALIDATION_ERROR (`id` or `with` not a UUID), NOT_FOUND (either run unknown or another org's).
   */
  async compare(ctx: CallContext, id: string, withId: string): Promise<Comparison & { runId: string; withRunId: string }> {
    if (!isUuid(withId)) throw AppError.validation('with must be a UUID.');
    const run = await this.requireRun(ctx, id);
    const other = await this.deps.repository.findRun(ctx.orgId, withId);
    if (!other) throw AppError.notFound('Check run to compare with (with) not found.');
    const [before, after] = await Promise.all([
      this.deps.repository.listRequirements(ctx.orgId, run.id),
      this.deps.repository.listRequirements(ctx.orgId, other.id),
    ]);
    // Versions of one document count as one document when the quote is the same (a revision).
    const firstSources = [...before, ...after].flatMap((r) =>
      r.subs
        .flatMap((s) => s.sources ?? [])
        .slice(0, 1)
        .map((src) => src.handbook_id),
    );
    const roots = await versionChainRoots(ctx, this.deps.documents, firstSources);
    const same = (a: string, b: string) => (roots.get(a) ?? a) === (roots.get(b) ?? b);
    return { runId: run.id, withRunId: other.id, ...compareRequirements(before, after, same) };
  }

  private requireIds(runId: string, requirementId: string): void {
    if (!isUuid(runId)) throw AppError.validation('id must be a UUID.');
    if (!isUuid(requirementId)) throw AppError.validation('requirement_id must be a UUID.');
  }

  private async requireRun(ctx: CallContext, id: string): Promise<RunRow> {
    if (!isUuid(id)) throw AppError.validation('id must be a UUID.');
    const run = await this.deps.repository.findRun(ctx.orgId, id);
    if (!run) throw AppError.notFound('Check run not found.');
    return run;
  }
}

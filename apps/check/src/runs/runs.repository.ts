import { AppError, AuditOrigin, enqueueWebhookEvent, recordAuditEvent, rowsOf } from '@kb/common';
import { doubtedJustification, readRun } from './run-corroboration';
import { randomUUID } from 'node:crypto';
import type { RequirementStatus, RunStatus, SubRequirementStatus } from '@kb/events';
import { DataSource, EntityManager } from 'typeorm';
import type { RequirementRow, ReviewDecision, RunEventBuilders, RunRow, StoredSource, SubRequirementRow } from './run-rows';

export type { RequirementStatus, RunStatus, SubRequirementStatus };

/** A review to store (already validated by the use case). */
export interface ReviewInput {
  decision: ReviewDecision;
  reviewer: string;
  comment: string | null;
}

/** The outcome of checking one sub-requirement, to be stored. */
export interface SubRequirementResult {
  text: string;
  justification: string;
  /** Confidence of the verdict on its own (the run's completion may raise it, run-corroboration.ts). */
  score: number;
  /** The embedded judge's calibrated P(COMPLIANT), 0 to 1; null for a chat-model judge (run-corroboration.ts). */
  pCompliant: number | null;
  /**
   * The justification shown when the run's passes corroborate each other and raise this verdict to P(COMPLIANT)
   * (run-corroboration.ts); null when it may not be raised (not an unsure COMPLIANT of the embedded judge's
   * requirement-satisfaction variant, or capped by a rule).
   */
  corroboratedJustification: string | null;
  verdict: 'COMPLIANT' | 'CONTRADICTS' | 'NOT_FOUND';
  sources: StoredSource[];
}

/** What a trigger decided: the run after the transition and the requirements left to check. */
export interface TriggerOutcome {
  run: RunRow;
  requirementIds: string[];
}

/**
 * A run's review summary (a JSON object, see {@link ReviewSummary}) as a scalar subquery on its
 * requirements; used inside RUN_COLUMNS, where the outer table is `check_runs`.
 */
const REVIEW_SUMMARY_SQL = `(
  SELECT json_build_object(
    'reviewed', count(*) FILTER (WHERE q.current_review),
    'passed', count(*) FILTER (WHERE CASE WHEN q.current_review THEN q.review_decision = 'pass' ELSE q.passed END),
    'failed', count(*) FILTER (WHERE CASE WHEN q.current_review THEN q.review_decision = 'fail' ELSE NOT q.passed END))
  FROM (
    SELECT passed, review_decision, (review_decision IS NOT NULL AND NOT review_outdated) AS current_review
    FROM check_requirements WHERE run_id = check_runs.id AND org_id = check_runs.org_id AND status = 'completed'
  ) q
) AS review_summary`;

const RUN_COLUMNS = `id, org_id, project_id, name, status, handbook_ids::text[] AS handbook_ids, total_requirements, processed_requirements,
  passed_requirements, failed_requirements, generation, task_id, skip_breakdown, error_message, processing_started_at,
  processing_completed_at, created_at, updated_at, source_run_id, ${REVIEW_SUMMARY_SQL}`;

/** Recomputes a run's counters from its requirement rows and completes it when every requirement is completed. */
const RECOUNT_SQL = `
  UPDATE check_runs c SET
    processed_requirements = s.processed,
    passed_requirements = s.passed,
    failed_requirements = s.failed,
    status = CASE WHEN c.status = 'processing' AND s.processed = c.total_requirements THEN 'completed' ELSE c.status END,
    processing_completed_at = CASE WHEN c.status = 'processing' AND s.processed = c.total_requirements THEN $2 ELSE c.processing_completed_at END,
    updated_at = $2
  FROM (
    SELECT count(*) FILTER (WHERE status = 'completed')::int AS processed,
           count(*) FILTER (WHERE status = 'completed' AND passed)::int AS passed,
           count(*) FILTER (WHERE status = 'completed' AND NOT passed)::int AS failed
    FROM check_requirements WHERE run_id = $1
  ) s
  WHERE c.id = $1
  RETURNING c.status`;

/**
 * Applies the run-level reading (run-corroboration.ts, docs/check.md "The run-level reading") to a run that has
 * just completed, inside the completing transaction (the run row is locked): every sub-requirement's verdict, status,
 * score and justification are set again from its single verdict (`judge_*` columns), raised in a corroborated run or
 * turned NOT_FOUND in a doubtful one; a requirement whose result changes gets `passed` again (and a review made
 * before becomes outdated); the counters are recounted. So a re-trigger recomputes everything from the single
 * verdicts. Rows stored before these columns existed (all NULL) count with their verdict and are never changed.
 * Only changed rows are written.
 */
async function readCompletedRun(m: EntityManager, orgId: string, runId: string, now: Date): Promise<void> {
  const requirements = rowsOf<{ id: string }>(
    await m.query(`SELECT id FROM check_requirements WHERE org_id = $1 AND run_id = $2 AND status = 'completed' ORDER BY order_index`, [orgId, runId]),
  );
  type Row = Pick<
    SubRequirementRow,
    | 'id'
    | 'requirement_id'
    | 'verdict'
    | 'status'
    | 'score'
    | 'justification'
    | 'judge_verdict'
    | 'judge_score'
    | 'judge_justification'
    | 'p_compliant'
    | 'corroborated_justification'
  >;
  const subs = rowsOf<Row>(
    await m.query(
      `SELECT id, requirement_id, verdict, status, score, justification, judge_verdict, judge_score, judge_justification, p_compliant,
         corroborated_justification
       FROM check_sub_requirements WHERE org_id = $1 AND run_id = $2 ORDER BY order_index`,
      [orgId, runId],
    ),
  );
  const byRequirement = new Map<string, Row[]>();
  for (const s of subs) byRequirement.set(s.requirement_id, [...(byRequirement.get(s.requirement_id) ?? []), s]);
  const subsOf = requirements.map((r) => byRequirement.get(r.id) ?? []);
  // Rows stored before the judge_* columns existed take part with what they show, and are never changed.
  const recorded = (s: Row) => s.judge_score !== null && s.judge_justification !== null && s.judge_verdict !== null;
  const input = subsOf.map((list) =>
    list.map((s) =>
      recorded(s)
        ? { verdict: s.judge_verdict, judgeScore: s.judge_score!, pCompliant: s.p_compliant, raisable: s.corroborated_justification !== null }
        : { verdict: s.verdict, judgeScore: s.score, pCompliant: null, raisable: false },
    ),
  );
  const judgePasses = input.filter((list) => list.length > 0 && list.every((x) => x.verdict === 'COMPLIANT')).length;
  const read = readRun(input.map((list) => ({ passed: list.length > 0 && list.every((x) => x.verdict === 'COMPLIANT'), subs: list })));
  const changedSubs: { id: string; verdict: string | null; status: string; score: number; justification: string }[] = [];
  read.requirements.forEach((r, i) =>
    r.subs.forEach((out, j) => {
      const s = subsOf[i][j];
      if (!recorded(s)) return;
      const justification =
        out.change === 'raised'
          ? s.corroborated_justification!
          : out.change === 'doubted'
            ? doubtedJustification(s.judge_justification!, judgePasses, requirements.length, s.p_compliant!)
            : s.judge_justification!;
      const next = { verdict: out.verdict, status: out.verdict === 'COMPLIANT' ? 'comply' : 'not-comply', score: out.score, justification };
      if (next.verdict !== s.verdict || next.status !== s.status || next.score !== s.score || next.justification !== s.justification) {
        changedSubs.push({ id: s.id, ...next });
      }
    }),
  );
  if (changedSubs.length === 0) return;
  await m.query(
    `UPDATE check_sub_requirements s SET verdict = v.verdict, status = v.status, score = v.score, justification = v.justification, updated_at = $6
     FROM unnest($1::uuid[], $2::text[], $3::text[], $4::float8[], $5::text[]) AS v(id, verdict, status, score, justification)
     WHERE s.org_id = $7 AND s.id = v.id`,
    [
      changedSubs.map((c) => c.id),
      changedSubs.map((c) => c.verdict),
      changedSubs.map((c) => c.status),
      changedSubs.map((c) => c.score),
      changedSubs.map((c) => c.justification),
      now,
      orgId,
    ],
  );
  // A requirement whose result changes: `passed` again, and a review made before no longer speaks about it.
  await m.query(
    `UPDATE check_requirements r SET passed = v.passed, review_outdated = (r.review_decision IS NOT NULL), updated_at = $3
     FROM unnest($1::uuid[], $2::bool[]) AS v(id, passed) WHERE r.org_id = $4 AND r.id = v.id AND r.passed IS DISTINCT FROM v.passed`,
    [requirements.map((r) => r.id), read.requirements.map((r) => r.passed), now, orgId],
  );
  await m.query(RECOUNT_SQL, [runId, now]);
}

/** A requirement's review as the audit log records it (before/after), or null when there is none. */
function auditReview(r: RequirementRow): Record<string, unknown> | null {
  if (r.review_decision === null) return null;
  return { decision: r.review_decision, reviewer: r.review_reviewer, comment: r.review_comment, reviewed_at: r.reviewed_at };
}

/** A run's fields as audit events record them (`data.after` of `check_run.created` and `check_run.rerun`). */
function runAuditSnapshot(run: RunRow): Record<string, unknown> {
  return {
    name: run.name,
    project_id: run.project_id,
    handbook_ids: run.handbook_ids ?? [],
    total_requirements: run.total_requirements,
    status: run.status,
  };
}

/**
 * Data access for check runs (schema `check`). Every statement filters by the caller's org id.
 * State changes are compare-and-set inside transactions that lock the run row, so concurrent
 * triggers, stops and workers (several replicas) never double-count a requirement: the counters
 * are always recomputed from the requirement rows (see RECOUNT_SQL).
 */
export class RunsRepository {
  /** @param events the check service's builders of the webhook events written with each state change. */
  constructor(
    private readonly db: DataSource,
    private readonly events: RunEventBuilders,
  ) {}

  /**
   * Inserts a pending run with its requirements (one statement for all requirements) and its
   * `check_run.created` audit event, in one transaction.
   * @param origin request id and API key recorded by the audit event.
   * @returns the run row.
   */
  async create(
    orgId: string,
    input: { projectId: string; name: string; handbookIds: string[]; requirements: { text: string; metadata: Record<string, unknown> | null }[] },
    origin?: AuditOrigin,
  ): Promise<RunRow> {
    const id = randomUUID();
    const now = new Date();
    return this.db.transaction(async (m) => {
      await m.query(
        `INSERT INTO check_runs (id, org_id, project_id, name, status, handbook_ids, total_requirements, created_at, updated_at)
         VALUES ($1, $2, $3, $4, 'pending', $5::uuid[], $6, $7, $7)`,
        [id, orgId, input.projectId, input.name, input.handbookIds, input.requirements.length, now],
      );
      await m.query(
        `INSERT INTO check_requirements (id, run_id, org_id, order_index, text, metadata, status, created_at, updated_at)
         SELECT r.id, $1, $2, r.ord - 1, r.text, r.metadata, 'pending', $6, $6
         FROM unnest($3::uuid[], $4::text[], $5::jsonb[]) WITH ORDINALITY AS r(id, text, metadata, ord)`,
        [
          id,
          orgId,
          input.requirements.map(() => randomUUID()),
          input.requirements.map((r) => r.text),
          input.requirements.map((r) => (r.metadata === null ? null : JSON.stringify(r.metadata))),
          now,
        ],
      );
      return this.auditedNewRun(m, orgId, id, 'check_run.created', origin, now, {});
    });
  }

  /**
   * Inserts a pending run that re-runs `sourceId` (decisions.md "Re-running and comparing check runs"):
   * the same project, `handbook_ids` (as stored) and requirements (text, metadata, order_index),
   * nothing of its results or reviews, `source_run_id` = `sourceId`, and the `check_run.rerun` audit
   * event (resource: the new run). One transaction.
   *
   * @returns the new run row.
   * @throws AppError NOT_FOUND when `sourceId` is unknown or another org's.
   */
  async rerun(orgId: string, sourceId: string, name: string, origin?: AuditOrigin): Promise<RunRow> {
    const id = randomUUID();
    const now = new Date();
    return this.db.transaction(async (m) => {
      const inserted = rowsOf<{ id: string }>(
        await m.query(
          `INSERT INTO check_runs (id, org_id, project_id, name, status, handbook_ids, total_requirements, source_run_id, created_at, updated_at)
         SELECT $3, org_id, project_id, $4, 'pending', handbook_ids,
                (SELECT count(*)::int FROM check_requirements WHERE org_id = $1 AND run_id = $2), id, $5, $5
         FROM check_runs WHERE org_id = $1 AND id = $2
         RETURNING id`,
          [orgId, sourceId, id, name, now],
        ),
      );
      if (inserted.length === 0) throw AppError.notFound('Check run not found.');
      await m.query(
        `INSERT INTO check_requirements (id, run_id, org_id, order_index, text, metadata, status, created_at, updated_at)
         SELECT gen_random_uuid(), $3, org_id, order_index, text, metadata, 'pending', $4, $4
         FROM check_requirements WHERE org_id = $1 AND run_id = $2`,
        [orgId, sourceId, id, now],
      );
      return this.auditedNewRun(m, orgId, id, 'check_run.rerun', origin, now, { source_run_id: sourceId });
    });
  }

  /**
   * Reads a run just inserted in transaction `m` and records its audit event there (`action` on resource
   * `check_run` `id`, data `{ ...data, after: runAuditSnapshot(run) }`).
   * @returns the run row.
   */
  private async auditedNewRun(
    m: EntityManager,
    orgId: string,
    id: string,
    action: 'check_run.created' | 'check_run.rerun',
    origin: AuditOrigin | undefined,
    at: Date,
    data: Record<string, unknown>,
  ): Promise<RunRow> {
    const run = (await this.findRun(orgId, id, m))!;
    await recordAuditEvent(m, { orgId, action, resourceType: 'check_run', resourceId: id, origin, at, data: { ...data, after: runAuditSnapshot(run) } });
    return run;
  }

  async findRun(orgId: string, id: string, m: EntityManager = this.db.manager): Promise<RunRow | null> {
    const rows: RunRow[] = await m.query(`SELECT ${RUN_COLUMNS} FROM check_runs WHERE org_id = $1 AND id = $2`, [orgId, id]);
    return rows[0] ?? null;
  }

  /** Runs of the org, newest first, optionally of one project. */
  async listRuns(orgId: string, projectId: string | null, limit: number, offset: number): Promise<{ rows: RunRow[]; total: number }> {
    const rows: RunRow[] = await this.db.query(
      `SELECT ${RUN_COLUMNS} FROM check_runs WHERE org_id = $1 AND ($2::uuid IS NULL OR project_id = $2)
       ORDER BY created_at DESC, id DESC LIMIT $3 OFFSET $4`,
      [orgId, projectId, limit, offset],
    );
    const [{ total }] = await this.db.query<{ total: number }[]>(
      `SELECT count(*)::int AS total FROM check_runs WHERE org_id = $1 AND ($2::uuid IS NULL OR project_id = $2)`,
      [orgId, projectId],
    );
    return { rows, total };
  }

  /**
   * Requirements of a run in order, with their sub-requirements in order; with `page`, only the
   * `limit` requirements after the first `offset` (by order_index) and their sub-requirements.
   */
  async listRequirements(
    orgId: string,
    runId: string,
    page?: { offset: number; limit: number },
  ): Promise<{ requirement: RequirementRow; subs: SubRequirementRow[] }[]> {
    const reqs: RequirementRow[] = page
      ? await this.db.query(`SELECT * FROM check_requirements WHERE org_id = $1 AND run_id = $2 ORDER BY order_index LIMIT $3 OFFSET $4`, [
          orgId,
          runId,
          page.limit,
          page.offset,
        ])
      : await this.db.query(`SELECT * FROM check_requirements WHERE org_id = $1 AND run_id = $2 ORDER BY order_index`, [orgId, runId]);
    if (page && reqs.length === 0) return [];
    const subs: SubRequirementRow[] = page
      ? await this.db.query(
          `SELECT * FROM check_sub_requirements WHERE org_id = $1 AND run_id = $2 AND requirement_id = ANY($3::uuid[]) ORDER BY requirement_id, order_index`,
          [orgId, runId, reqs.map((r) => r.id)],
        )
      : await this.db.query(`SELECT * FROM check_sub_requirements WHERE org_id = $1 AND run_id = $2 ORDER BY requirement_id, order_index`, [orgId, runId]);
    const byReq = new Map<string, SubRequirementRow[]>();
    for (const s of subs) {
      const list = byReq.get(s.requirement_id) ?? [];
      list.push(s);
      byReq.set(s.requirement_id, list);
    }
    return reqs.map((requirement) => ({ requirement, subs: byReq.get(requirement.id) ?? [] }));
  }

  /**
   * Moves a run into `processing` (decisions.md "Trigger") and records `check_run.triggered` in the audit log: with `reprocess` every requirement is reset
   * to pending; otherwise requirements left in `processing` by a stop or failure go back to pending and
   * completed ones are kept. A run with nothing left to check goes straight to `completed`.
   *
   * `queue`, when given, is called inside the transaction once the transition is written, with what
   * is left to check: the transition commits only when it resolves, so work that cannot be queued
   * (NATS down) leaves the run exactly as it was. A worker that receives a queued item before the
   * commit waits for it in {@link claim} (the run row stays locked until then).
   *
   * @throws AppError NOT_FOUND (unknown run or another org's), CONFLICT (run already processing);
   *   whatever `queue` throws (nothing is changed then).
   */
  async trigger(
    orgId: string,
    id: string,
    opts: { reprocess: boolean; skipBreakdown: boolean },
    origin?: AuditOrigin,
    queue?: (outcome: TriggerOutcome) => Promise<void>,
  ): Promise<TriggerOutcome> {
    return this.db.transaction(async (m) => {
      const [run]: RunRow[] = await m.query(`SELECT ${RUN_COLUMNS} FROM check_runs WHERE org_id = $1 AND id = $2 FOR UPDATE`, [orgId, id]);
      if (!run) throw AppError.notFound('Check run not found.');
      if (run.status === 'processing') throw AppError.conflict('The check run is already being processed; stop it first or wait until it finishes.');
      const now = new Date();
      if (opts.reprocess) {
        await m.query(`DELETE FROM check_sub_requirements WHERE org_id = $1 AND run_id = $2`, [orgId, id]);
        await m.query(`UPDATE check_requirements SET status = 'pending', passed = NULL, updated_at = $3 WHERE org_id = $1 AND run_id = $2`, [orgId, id, now]);
      } else {
        await m.query(`UPDATE check_requirements SET status = 'pending', updated_at = $3 WHERE org_id = $1 AND run_id = $2 AND status = 'processing'`, [
          orgId,
          id,
          now,
        ]);
      }
      const pending: { id: string }[] = await m.query(
        `SELECT id FROM check_requirements WHERE org_id = $1 AND run_id = $2 AND status = 'pending' ORDER BY order_index`,
        [orgId, id],
      );
      const status: RunStatus = pending.length === 0 ? 'completed' : 'processing';
      await m.query(
        `UPDATE check_runs SET status = $3, generation = generation + 1, task_id = $4, skip_breakdown = $5, error_message = NULL,
           processing_started_at = $6, processing_completed_at = $7, updated_at = $6
         WHERE org_id = $1 AND id = $2`,
        [orgId, id, status, randomUUID(), opts.skipBreakdown, now, status === 'completed' ? now : null],
      );
      const [{ status: recounted }] = rowsOf<{ status: RunStatus }>(await m.query(RECOUNT_SQL, [id, now]));
      // Nothing left to check: the run completes in this very transaction (its run-level reading applied), and says so.
      if (recounted === 'completed') await readCompletedRun(m, orgId, id, now);
      const after = (await this.findRun(orgId, id, m))!;
      if (after.status === 'completed') await enqueueWebhookEvent(m, this.events.run('check_run.completed', after, now));
      await recordAuditEvent(m, {
        orgId,
        action: 'check_run.triggered',
        resourceType: 'check_run',
        resourceId: id,
        origin,
        at: now,
        data: {
          reprocess: opts.reprocess,
          skip_breakdown: opts.skipBreakdown,
          requirements_queued: pending.length,
          before: { status: run.status },
          after: { status: after.status },
        },
      });
      const outcome = { run: after, requirementIds: pending.map((p) => p.id) };
      if (queue) await queue(outcome);
      return outcome;
    });
  }

  /**
   * Stops a processing run: status `stopped`, requirements in flight back to `pending` (their results,
   * if a worker finishes them later, are discarded); records `check_run.stopped` in the audit log.
   * @throws AppError NOT_FOUND, CONFLICT when the run is not processing.
   */
  async stop(orgId: string, id: string, origin?: AuditOrigin): Promise<RunRow> {
    return this.db.transaction(async (m) => {
      const [run]: RunRow[] = await m.query(`SELECT ${RUN_COLUMNS} FROM check_runs WHERE org_id = $1 AND id = $2 FOR UPDATE`, [orgId, id]);
      if (!run) throw AppError.notFound('Check run not found.');
      if (run.status !== 'processing') throw AppError.conflict(`Only a processing check run can be stopped; this run is ${run.status}.`);
      const now = new Date();
      await m.query(`UPDATE check_runs SET status = 'stopped', processing_completed_at = $3, updated_at = $3 WHERE org_id = $1 AND id = $2`, [orgId, id, now]);
      await m.query(`UPDATE check_requirements SET status = 'pending', updated_at = $3 WHERE org_id = $1 AND run_id = $2 AND status = 'processing'`, [
        orgId,
        id,
        now,
      ]);
      const stopped = (await this.findRun(orgId, id, m))!;
      await enqueueWebhookEvent(m, this.events.run('check_run.stopped', stopped, now));
      await recordAuditEvent(m, {
        orgId,
        action: 'check_run.stopped',
        resourceType: 'check_run',
        resourceId: id,
        origin,
        at: now,
        data: { before: { status: run.status }, after: { status: stopped.status } },
      });
      return stopped;
    });
  }

  /**
   * Claims a requirement for checking by the run's current generation: pending (or processing, after a
   * worker crash) → processing. The run row is share-locked, so a concurrent stop either sees this claim
   * (and returns the requirement to pending) or makes it find nothing. Returns null when the run is no longer processing this generation or
   * the requirement is already completed (a redelivered work item).
   */
  async claim(orgId: string, runId: string, generation: number, requirementId: string): Promise<RequirementRow | null> {
    // Lock first, by id alone, then decide: the share lock waits for a trigger still queueing its work
    // (RunsRepository.trigger holds the run row until it commits) and returns the row as that trigger
    // left it. Conditions on status or generation in the locking statement would be tested against
    // the row as it was before that trigger (READ COMMITTED tests a row version older than the
    // statement's snapshot only once it matched), and so would the requirements in the same
    // statement (still `completed` before a reprocess): the UPDATE is a later statement.
    return this.db.transaction(async (m) => {
      const [run]: Pick<RunRow, 'status' | 'generation'>[] = await m.query(
        `SELECT status, generation FROM check_runs WHERE org_id = $1 AND id = $2 FOR SHARE`,
        [orgId, runId],
      );
      if (!run || run.status !== 'processing' || Number(run.generation) !== generation) return null;
      const rows = rowsOf<RequirementRow>(
        await m.query(
          `UPDATE check_requirements r SET status = 'processing', updated_at = $4
         WHERE r.id = $3 AND r.run_id = $2 AND r.org_id = $1 AND r.status <> 'completed'
         RETURNING r.*`,
          [orgId, runId, requirementId, new Date()],
        ),
      );
      return rows[0] ?? null;
    });
  }

  /**
   * Stores a checked requirement and its sub-requirements, and recomputes the run's counters, in one
   * transaction holding the run row lock. Idempotent: a requirement already completed, or a run that is
   * no longer processing this generation (stopped, failed, re-triggered), changes nothing.
   *
   * @returns 'stored', or 'discarded' when nothing changed; `runStatus` after the update.
   */
  async complete(
    orgId: string,
    runId: string,
    generation: number,
    requirementId: string,
    subs: SubRequirementResult[],
  ): Promise<{ outcome: 'stored' | 'discarded'; runStatus: RunStatus | null }> {
    return this.db.transaction(async (m) => {
      const [run]: { status: RunStatus; generation: number }[] = await m.query(
        `SELECT status, generation FROM check_runs WHERE org_id = $1 AND id = $2 FOR UPDATE`,
        [orgId, runId],
      );
      if (!run || run.status !== 'processing' || run.generation !== generation) return { outcome: 'discarded' as const, runStatus: run?.status ?? null };
      const now = new Date();
      const passed = subs.length > 0 && subs.every((s) => s.verdict === 'COMPLIANT');
      const updated = rowsOf(
        await m.query(
          // A review made before this result no longer speaks about it: it becomes outdated (kept, shown as such).
          `UPDATE check_requirements SET status = 'completed', passed = $4, review_outdated = (review_decision IS NOT NULL), updated_at = $5
         WHERE org_id = $1 AND run_id = $2 AND id = $3 AND status <> 'completed' RETURNING id`,
          [orgId, runId, requirementId, passed, now],
        ),
      );
      if (updated.length === 0) return { outcome: 'discarded' as const, runStatus: run.status };
      await m.query(`DELETE FROM check_sub_requirements WHERE org_id = $1 AND requirement_id = $2`, [orgId, requirementId]);
      if (subs.length > 0) {
        await m.query(
          `INSERT INTO check_sub_requirements (id, requirement_id, run_id, org_id, order_index, text, justification, score, judge_score,
             judge_justification, judge_verdict, p_compliant, corroborated_justification, status, verdict, sources, created_at, updated_at)
           SELECT s.id, $1, $2, $3, s.ord - 1, s.text, s.justification, s.score, s.score, s.justification, s.verdict, s.p_compliant,
             s.corroborated_justification, s.status, s.verdict, s.sources, $10, $10
           FROM unnest($4::uuid[], $5::text[], $6::text[], $7::float8[], $8::text[], $9::text[], $11::jsonb[], $12::float8[], $13::text[])
             WITH ORDINALITY AS s(id, text, justification, score, status, verdict, sources, p_compliant, corroborated_justification, ord)`,
          [
            requirementId,
            runId,
            orgId,
            subs.map(() => randomUUID()),
            subs.map((s) => s.text),
            subs.map((s) => s.justification),
            subs.map((s) => s.score),
            subs.map((s) => (s.verdict === 'COMPLIANT' ? 'comply' : 'not-comply')),
            subs.map((s) => s.verdict),
            now,
            subs.map((s) => JSON.stringify(s.sources)),
            subs.map((s) => s.pCompliant),
            subs.map((s) => s.corroboratedJustification),
          ],
        );
      }
      const [{ status }] = rowsOf<{ status: RunStatus }>(await m.query(RECOUNT_SQL, [runId, now]));
      // The run was processing (checked above under the row lock): `completed` now is this transaction's transition.
      if (status === 'completed') {
        await readCompletedRun(m, orgId, runId, now);
        await enqueueWebhookEvent(m, this.events.run('check_run.completed', (await this.findRun(orgId, runId, m))!, now));
      }
      return { outcome: 'stored' as const, runStatus: status };
    });
  }

  /**
   * Sets (or replaces) the review of a completed requirement, enqueues the
   * `check_run.requirement_reviewed` webhook event and records `requirement.reviewed` (before/after) in the audit log, in one transaction holding the run row lock (so
   * a run's events keep their order). A new review is never outdated.
   *
   * @returns the requirement row with its review, and its sub-requirements.
   * @throws AppError NOT_FOUND (unknown run or another org's, unknown requirement or one of another
   *   run), CONFLICT (the requirement is not `completed`).
   */
  async setReview(
    orgId: string,
    runId: string,
    requirementId: string,
    review: ReviewInput,
    origin?: AuditOrigin,
  ): Promise<{ requirement: RequirementRow; subs: SubRequirementRow[] }> {
    return this.db.transaction(async (m) => {
      const current = await this.lockReviewable(m, orgId, runId, requirementId);
      const now = new Date();
      const [requirement] = rowsOf<RequirementRow>(
        await m.query(
          `UPDATE check_requirements SET review_decision = $4, review_reviewer = $5, review_comment = $6, reviewed_at = $7, review_outdated = false
         WHERE org_id = $1 AND run_id = $2 AND id = $3 RETURNING *`,
          [orgId, runId, requirementId, review.decision, review.reviewer, review.comment, now],
        ),
      );
      const subs = await this.subsOf(m, orgId, requirementId);
      await enqueueWebhookEvent(m, this.events.requirement(requirement, subs, now));
      await recordAuditEvent(m, {
        orgId,
        action: 'requirement.reviewed',
        resourceType: 'requirement',
        resourceId: requirementId,
        origin,
        at: now,
        reviewer: review.reviewer,
        data: { run_id: runId, before: auditReview(current), after: auditReview(requirement) },
      });
      return { requirement, subs };
    });
  }

  /**
   * Removes the review of a completed requirement; removing a review that does not exist changes
   * nothing (idempotent). When a review was removed, the `check_run.requirement_reviewed` event
   * (`review` null) and the `requirement.review_removed` audit event are written in the same transaction.
   *
   * @returns whether a review was removed.
   * @throws AppError NOT_FOUND (as {@link setReview}), CONFLICT (the requirement is not `completed`).
   */
  async clearReview(orgId: string, runId: string, requirementId: string, origin?: AuditOrigin): Promise<boolean> {
    return this.db.transaction(async (m) => {
      const current = await this.lockReviewable(m, orgId, runId, requirementId);
      if (current.review_decision === null) return false;
      const [requirement] = rowsOf<RequirementRow>(
        await m.query(
          `UPDATE check_requirements SET review_decision = NULL, review_reviewer = NULL, review_comment = NULL, reviewed_at = NULL, review_outdated = false
         WHERE org_id = $1 AND run_id = $2 AND id = $3 RETURNING *`,
          [orgId, runId, requirementId],
        ),
      );
      const now = new Date();
      await enqueueWebhookEvent(m, this.events.requirement(requirement, await this.subsOf(m, orgId, requirementId), now));
      await recordAuditEvent(m, {
        orgId,
        action: 'requirement.review_removed',
        resourceType: 'requirement',
        resourceId: requirementId,
        origin,
        at: now,
        reviewer: current.review_reviewer,
        data: { run_id: runId, before: auditReview(current), after: null },
      });
      return true;
    });
  }

  /**
   * Locks the run row (FOR UPDATE, as every run state change does) and the requirement row, and
   * checks that the requirement can be reviewed.
   * @throws AppError NOT_FOUND, CONFLICT (see {@link setReview}).
   */
  private async lockReviewable(m: EntityManager, orgId: string, runId: string, requirementId: string): Promise<RequirementRow> {
    const [run]: { id: string }[] = await m.query(`SELECT id FROM check_runs WHERE org_id = $1 AND id = $2 FOR UPDATE`, [orgId, runId]);
    if (!run) throw AppError.notFound('Check run not found.');
    const [requirement]: RequirementRow[] = await m.query(`SELECT * FROM check_requirements WHERE org_id = $1 AND run_id = $2 AND id = $3 FOR UPDATE`, [
      orgId,
      runId,
      requirementId,
    ]);
    if (!requirement) throw AppError.notFound('Requirement not found in this check run.');
    if (requirement.status !== 'completed') throw AppError.conflict(`Only a completed requirement can be reviewed; this requirement is ${requirement.status}.`);
    return requirement;
  }

  private async subsOf(m: EntityManager, orgId: string, requirementId: string): Promise<SubRequirementRow[]> {
    return m.query(`SELECT * FROM check_sub_requirements WHERE org_id = $1 AND requirement_id = $2 ORDER BY order_index`, [orgId, requirementId]);
  }

  /**
   * Fails a run that cannot continue (model provider unreachable after retries, …): status `failed`
   * with the reason; requirements in flight go back to pending; finished requirements are kept.
   * Only the given generation is failed (a later trigger is left alone).
   */
  async fail(orgId: string, runId: string, generation: number, message: string): Promise<boolean> {
    return this.db.transaction(async (m) => {
      const now = new Date();
      const rows = rowsOf(
        await m.query(
          `UPDATE check_runs SET status = 'failed', error_message = $4, processing_completed_at = $5, updated_at = $5
         WHERE org_id = $1 AND id = $2 AND generation = $3 AND status = 'processing' RETURNING id`,
          [orgId, runId, generation, message, now],
        ),
      );
      if (rows.length === 0) return false;
      await enqueueWebhookEvent(m, this.events.run('check_run.failed', (await this.findRun(orgId, runId, m))!, now));
      await m.query(`UPDATE check_requirements SET status = 'pending', updated_at = $3 WHERE org_id = $1 AND run_id = $2 AND status = 'processing'`, [
        orgId,
        runId,
        now,
      ]);
      return true;
    });
  }
}

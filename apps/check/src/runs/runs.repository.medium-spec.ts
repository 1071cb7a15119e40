import { AppError, ErrorCode } from '@kb/common';
import { randomUUID } from 'node:crypto';
import { useTestDatabase } from '../../../../test/medium/database';
import { openCheckDatabase } from '../database/database';
import { runEvents } from './run-events';
import { RunsRepository, SubRequirementResult } from './runs.repository';
import { subResult } from './fixtures';

// The run repository's hand-written SQL on a real PostgreSQL: trigger/stop/claim/complete under
// concurrency (several workers, a crashed worker, a re-trigger), counters, webhook outbox, org scope.

const ORG = 'org-runs-a';
const OTHER_ORG = 'org-runs-b';

const compliant = (text: string): SubRequirementResult =>
  subResult('COMPLIANT', {
    text,
    justification: 'stated in the handbook',
    sources: [{ handbook_id: randomUUID(), node_id: 'n1', title: 'Handbook', start_page: 1, end_page: 2, section: 'Safety' }],
  });
const missing = (text: string): SubRequirementResult => subResult('NOT_FOUND', { text });

describe('RunsRepository on PostgreSQL', () => {
  const db = useTestDatabase('runs', openCheckDatabase);
  let runs: RunsRepository;
  beforeAll(() => {
    runs = new RunsRepository(db(), runEvents);
  });

  const newRun = (orgId = ORG, texts = ['R1', 'R2', 'R3']) =>
    runs.create(orgId, {
      projectId: randomUUID(),
      name: 'Run',
      handbookIds: [randomUUID()],
      requirements: texts.map((text) => ({ text, metadata: { ref: text } })),
    });
  const outboxTypes = async (runId: string): Promise<string[]> =>
    (await db().query(`SELECT type FROM webhook_outbox WHERE resource_key = $1 ORDER BY seq`, [`check_run:${runId}`])).map((r: { type: string }) => r.type);

  it('creates a pending run with its requirements in order, visible only to its org', async () => {
    const run = await newRun();
    expect(run).toMatchObject({ org_id: ORG, status: 'pending', total_requirements: 3, processed_requirements: 0, generation: 0 });
    const reqs = await runs.listRequirements(ORG, run.id);
    expect(reqs.map((r) => [r.requirement.order_index, r.requirement.text, r.requirement.metadata])).toEqual([
      [0, 'R1', { ref: 'R1' }],
      [1, 'R2', { ref: 'R2' }],
      [2, 'R3', { ref: 'R3' }],
    ]);
    expect(await runs.findRun(OTHER_ORG, run.id)).toBeNull();
    expect(await runs.listRequirements(OTHER_ORG, run.id)).toEqual([]);
    await expect(runs.trigger(OTHER_ORG, run.id, { reprocess: false, skipBreakdown: false })).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND });
    await expect(runs.stop(OTHER_ORG, run.id)).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND });
  });

  it("lists an org's runs newest first with the total, filtered by project, never another org's", async () => {
    const projectId = randomUUID();
    const mine = [];
    for (const name of ['first', 'second', 'third']) {
      mine.push(await runs.create(ORG, { projectId, name, handbookIds: [], requirements: [{ text: 'x', metadata: null }] }));
    }
    await runs.create(OTHER_ORG, { projectId, name: 'foreign', handbookIds: [], requirements: [{ text: 'x', metadata: null }] });
    const page = await runs.listRuns(ORG, projectId, 2, 0);
    expect(page.total).toBe(3);
    expect(page.rows.map((r) => r.name)).toEqual(['third', 'second']);
    expect((await runs.listRuns(ORG, projectId, 2, 2)).rows.map((r) => r.name)).toEqual(['first']);
    expect((await runs.listRuns(OTHER_ORG, projectId, 10, 0)).rows.map((r) => r.name)).toEqual(['foreign']);
  });

  it('a trigger moves the run to processing once; a second trigger conflicts', async () => {
    const run = await newRun();
    const { run: after, requirementIds } = await runs.trigger(ORG, run.id, { reprocess: false, skipBreakdown: true });
    expect(after).toMatchObject({ status: 'processing', generation: 1, skip_breakdown: true });
    expect(requirementIds).toHaveLength(3);
    await expect(runs.trigger(ORG, run.id, { reprocess: false, skipBreakdown: false })).rejects.toMatchObject({ code: ErrorCode.CONFLICT });
    // Two concurrent triggers of a pending run: exactly one wins.
    const other = await newRun();
    const results = await Promise.allSettled([
      runs.trigger(ORG, other.id, { reprocess: false, skipBreakdown: false }),
      runs.trigger(ORG, other.id, { reprocess: false, skipBreakdown: false }),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const rejected = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(rejected.reason).toBeInstanceOf(AppError);
    expect((rejected.reason as AppError).code).toBe(ErrorCode.CONFLICT);
  });

  it('counts a requirement completed by two workers at once exactly once, and completes the run with one webhook event', async () => {
    const run = await newRun();
    const { run: t, requirementIds } = await runs.trigger(ORG, run.id, { reprocess: false, skipBreakdown: false });
    // Every requirement is delivered to two workers (a JetStream redelivery while the first still works).
    for (const id of requirementIds) {
      const claims = await Promise.all([runs.claim(ORG, run.id, t.generation, id), runs.claim(ORG, run.id, t.generation, id)]);
      expect(claims.every((c) => c?.status === 'processing')).toBe(true);
      const outcomes = await Promise.all([
        runs.complete(ORG, run.id, t.generation, id, [compliant('a'), compliant('b')]),
        runs.complete(ORG, run.id, t.generation, id, [missing('c')]),
      ]);
      expect(outcomes.map((o) => o.outcome).sort()).toEqual(['discarded', 'stored']);
    }
    const done = (await runs.findRun(ORG, run.id))!;
    expect(done).toMatchObject({ status: 'completed', processed_requirements: 3 });
    expect(done.passed_requirements + done.failed_requirements).toBe(3);
    expect(done.processing_completed_at).not.toBeNull();
    // A requirement keeps the sub-requirements of the worker that stored it, not a mix of both.
    for (const { requirement, subs } of await runs.listRequirements(ORG, run.id)) {
      expect(requirement.status).toBe('completed');
      expect([['a', 'b'], ['c']]).toContainEqual(subs.map((s) => s.text));
      expect(requirement.passed).toBe(subs.length === 2);
    }
    expect(await outboxTypes(run.id)).toEqual(['check_run.completed']);
    // A late redelivery after completion finds nothing to claim and changes nothing.
    expect(await runs.claim(ORG, run.id, t.generation, requirementIds[0])).toBeNull();
    expect(await runs.complete(ORG, run.id, t.generation, requirementIds[0], [missing('late')])).toEqual({ outcome: 'discarded', runStatus: 'completed' });
  });

  it('a requirement left processing by a crashed worker is taken over by the next claim', async () => {
    const run = await newRun(ORG, ['only']);
    const { run: t, requirementIds } = await runs.trigger(ORG, run.id, { reprocess: false, skipBreakdown: false });
    expect(await runs.claim(ORG, run.id, t.generation, requirementIds[0])).not.toBeNull(); // the worker that dies
    const takeover = await runs.claim(ORG, run.id, t.generation, requirementIds[0]);
    expect(takeover).toMatchObject({ id: requirementIds[0], status: 'processing' });
    expect((await runs.complete(ORG, run.id, t.generation, requirementIds[0], [compliant('ok')])).outcome).toBe('stored');
    expect(await runs.findRun(ORG, run.id)).toMatchObject({ status: 'completed', passed_requirements: 1 });
  });

  it('a stop returns work in flight to pending and discards results that arrive after it', async () => {
    const run = await newRun(ORG, ['one', 'two']);
    const { run: t, requirementIds } = await runs.trigger(ORG, run.id, { reprocess: false, skipBreakdown: false });
    await runs.claim(ORG, run.id, t.generation, requirementIds[0]);
    const stopped = await runs.stop(ORG, run.id);
    expect(stopped.status).toBe('stopped');
    expect((await runs.listRequirements(ORG, run.id)).map((r) => r.requirement.status)).toEqual(['pending', 'pending']);
    expect(await runs.claim(ORG, run.id, t.generation, requirementIds[1])).toBeNull();
    expect((await runs.complete(ORG, run.id, t.generation, requirementIds[0], [compliant('late')])).outcome).toBe('discarded');
    expect(await runs.findRun(ORG, run.id)).toMatchObject({ status: 'stopped', processed_requirements: 0 });
    await expect(runs.stop(ORG, run.id)).rejects.toMatchObject({ code: ErrorCode.CONFLICT });
    expect(await outboxTypes(run.id)).toEqual(['check_run.stopped']);
  });

  it("a re-trigger keeps finished requirements, starts a new generation and ignores the old one's workers", async () => {
    const run = await newRun(ORG, ['one', 'two']);
    const first = await runs.trigger(ORG, run.id, { reprocess: false, skipBreakdown: false });
    await runs.claim(ORG, run.id, first.run.generation, first.requirementIds[0]);
    await runs.complete(ORG, run.id, first.run.generation, first.requirementIds[0], [compliant('kept')]);
    await runs.stop(ORG, run.id);
    const second = await runs.trigger(ORG, run.id, { reprocess: false, skipBreakdown: false });
    expect(second.run.generation).toBe(first.run.generation + 1);
    expect(second.requirementIds).toEqual([first.requirementIds[1]]);
    expect(second.run.processed_requirements).toBe(1);
    // A worker of the first generation cannot claim or store anything any more.
    expect(await runs.claim(ORG, run.id, first.run.generation, first.requirementIds[1])).toBeNull();
    expect((await runs.complete(ORG, run.id, first.run.generation, first.requirementIds[1], [missing('old')])).outcome).toBe('discarded');
    // Reprocess: everything is checked again from scratch.
    await runs.stop(ORG, run.id);
    const third = await runs.trigger(ORG, run.id, { reprocess: true, skipBreakdown: false });
    expect(third.requirementIds).toHaveLength(2);
    expect(third.run.processed_requirements).toBe(0);
    expect((await runs.listRequirements(ORG, run.id)).every((r) => r.subs.length === 0 && r.requirement.passed === null)).toBe(true);
  });

  it('a run with nothing left to check completes at trigger, with its webhook event', async () => {
    const run = await newRun(ORG, ['one']);
    const t = await runs.trigger(ORG, run.id, { reprocess: false, skipBreakdown: false });
    await runs.claim(ORG, run.id, t.run.generation, t.requirementIds[0]);
    await runs.complete(ORG, run.id, t.run.generation, t.requirementIds[0], [compliant('x')]);
    const again = await runs.trigger(ORG, run.id, { reprocess: false, skipBreakdown: false });
    expect(again.run.status).toBe('completed');
    expect(again.requirementIds).toEqual([]);
    expect(await outboxTypes(run.id)).toEqual(['check_run.completed', 'check_run.completed']);
  });

  it('fails only the given generation of a processing run, keeping finished requirements', async () => {
    const run = await newRun(ORG, ['one', 'two']);
    const t = await runs.trigger(ORG, run.id, { reprocess: false, skipBreakdown: false });
    await runs.claim(ORG, run.id, t.run.generation, t.requirementIds[0]);
    await runs.complete(ORG, run.id, t.run.generation, t.requirementIds[0], [compliant('x')]);
    await runs.claim(ORG, run.id, t.run.generation, t.requirementIds[1]);
    expect(await runs.fail(ORG, run.id, t.run.generation + 1, 'wrong generation')).toBe(false);
    expect(await runs.fail(OTHER_ORG, run.id, t.run.generation, 'wrong org')).toBe(false);
    expect(await runs.fail(ORG, run.id, t.run.generation, 'model provider unreachable')).toBe(true);
    expect(await runs.findRun(ORG, run.id)).toMatchObject({ status: 'failed', error_message: 'model provider unreachable', processed_requirements: 1 });
    expect((await runs.listRequirements(ORG, run.id)).map((r) => r.requirement.status)).toEqual(['completed', 'pending']);
    expect(await runs.fail(ORG, run.id, t.run.generation, 'again')).toBe(false);
    expect(await outboxTypes(run.id)).toEqual(['check_run.failed']);
  });
  it('work queued inside a trigger: a worker handed it before the commit waits for it; a failed queue changes nothing', async () => {
    const run = await newRun();
    // A first pass completes every requirement: the reprocess below turns them from completed to pending.
    const first = await runs.trigger(ORG, run.id, { reprocess: false, skipBreakdown: true });
    for (const id of first.requirementIds) {
      await runs.claim(ORG, run.id, first.run.generation, id);
      await runs.complete(ORG, run.id, first.run.generation, id, [compliant('a')]);
    }
    const completed = (await runs.findRun(ORG, run.id))!;
    expect(completed.status).toBe('completed');

    // The queue fails: the run, its requirements and results are as they were.
    const before = await runs.listRequirements(ORG, run.id);
    await expect(
      runs.trigger(ORG, run.id, { reprocess: true, skipBreakdown: true }, undefined, async () => {
        throw new Error('NATS is down');
      }),
    ).rejects.toThrow('NATS is down');
    expect(await runs.findRun(ORG, run.id)).toEqual(completed);
    expect(await runs.listRequirements(ORG, run.id)).toEqual(before);

    // The queue works, and a worker claims the first requirement while the trigger has not committed yet.
    let early: Promise<unknown> | undefined;
    const t = await runs.trigger(ORG, run.id, { reprocess: true, skipBreakdown: true }, undefined, async ({ run: r, requirementIds }) => {
      early = runs.claim(ORG, run.id, r.generation, requirementIds[0]);
      await new Promise((resolve) => setTimeout(resolve, 200));
    });
    expect(await early).toMatchObject({ id: t.requirementIds[0], status: 'processing' });
    for (const [i, id] of t.requirementIds.entries()) {
      if (i > 0) expect(await runs.claim(ORG, run.id, t.run.generation, id)).toMatchObject({ status: 'processing' });
      expect((await runs.complete(ORG, run.id, t.run.generation, id, [missing('c')])).outcome).toBe('stored');
    }
    expect(await runs.findRun(ORG, run.id)).toMatchObject({ status: 'completed', processed_requirements: 3 });
  });

  it('applies the run-level reading when a run of 20 or more completes: passes corroborate or are doubted, recomputed on every completion', async () => {
    // `passes` of 20 requirements pass unsure (0.6) with P(COMPLIANT) 0.85 (raisable), the rest are not found.
    const unsure = (pCompliant: number, raisable = true): SubRequirementResult => ({
      ...compliant('a'),
      score: 0.6,
      pCompliant,
      corroboratedJustification: raisable ? 'corroborated' : null,
    });
    const finish = async (results: SubRequirementResult[][], runId?: string) => {
      const id =
        runId ??
        (
          await newRun(
            ORG,
            results.map((_, i) => `R${i}`),
          )
        ).id;
      const t = await runs.trigger(ORG, id, { reprocess: true, skipBreakdown: true });
      for (const [i, rid] of t.requirementIds.entries()) {
        await runs.claim(ORG, id, t.run.generation, rid);
        await runs.complete(ORG, id, t.run.generation, rid, results[i]);
        // Until the run completes, every sub-requirement shows its single verdict.
        if (i < results.length - 1) {
          const shown = (await runs.listRequirements(ORG, id)).flatMap((r) => r.subs);
          expect(shown.filter((s) => s.justification === 'corroborated' || s.verdict !== s.judge_verdict)).toEqual([]);
        }
      }
      const run = (await runs.findRun(ORG, id))!;
      const reqs = await runs.listRequirements(ORG, id);
      return {
        run,
        reqs,
        scores: reqs.map((r) => r.subs[0].score),
        verdicts: reqs.map((r) => r.subs[0].verdict),
        justifications: reqs.map((r) => r.subs[0].justification),
      };
    };
    const of = (passing: SubRequirementResult[], total = 20) => [
      ...passing.map((p) => [p]),
      ...Array.from({ length: total - passing.length }, () => [missing('b')]),
    ];

    // 6 of 20 pass (30 %): corroborated; failing sub-requirements keep their score.
    const corroborated = await finish(of(Array(6).fill(unsure(0.85))));
    expect(corroborated.scores).toEqual([...Array(6).fill(0.85), ...Array(14).fill(0.1)]);
    expect(corroborated.justifications).toEqual([...Array(6).fill('corroborated'), ...Array(14).fill('not found')]);
    expect(corroborated.run).toMatchObject({ passed_requirements: 6, failed_requirements: 14 });
    // 5 of 20 (25 %): neither corroborated nor doubtful, nothing changes.
    const between = await finish(of(Array(5).fill(unsure(0.85))));
    expect(between.scores).toEqual([...Array(5).fill(0.6), ...Array(15).fill(0.1)]);
    expect(between.justifications.slice(0, 5)).toEqual(Array(5).fill('stated in the handbook'));

    // 4 of 25 (16 %): doubtful. An unsure pass raised nowhere (P 0.65, or capped by a rule) becomes NOT_FOUND below 0.7 and
    // its requirement fails; one with P(COMPLIANT) 0.85 and raisable stands, unchanged; a confident pass (0.9) stands.
    const doubtful = await finish(of([unsure(0.65), unsure(0.85, false), unsure(0.85)], 25).map((x, i) => (i === 24 ? [compliant('sure')] : x)));
    expect(doubtful.verdicts.slice(0, 3)).toEqual(['NOT_FOUND', 'NOT_FOUND', 'COMPLIANT']);
    expect(doubtful.scores[0]).toBeCloseTo(0.35);
    expect(doubtful.scores[1]).toBeCloseTo(0.15);
    expect(doubtful.scores[2]).toBe(0.6);
    expect(doubtful.reqs.slice(0, 3).map((r) => [r.requirement.passed, r.subs[0].status])).toEqual([
      [false, 'not-comply'],
      [false, 'not-comply'],
      [true, 'comply'],
    ]);
    expect(doubtful.justifications[0]).toMatch(/^Not taken as met: only 4 of the run's 25 requirements pass against these documents.*stated in the handbook$/);
    expect(doubtful.reqs[24].subs[0]).toMatchObject({ verdict: 'COMPLIANT', score: 0.9 });
    expect(doubtful.run).toMatchObject({ passed_requirements: 2, failed_requirements: 23 });
    const events = (await db().query(`SELECT type, payload FROM webhook_outbox WHERE resource_key = $1 ORDER BY seq`, [`check_run:${doubtful.run.id}`])).filter(
      (e: { type: string }) => e.type === 'check_run.completed',
    );
    expect(events.at(-1).payload.data).toMatchObject({ passed_requirements: 2, failed_requirements: 23 });

    // Reprocessing the doubtful run with results that now pass in number: recomputed from the new single verdicts.
    const again = await finish(of(Array(8).fill(unsure(0.8)), 25), doubtful.run.id);
    expect(again.scores).toEqual([...Array(8).fill(0.8), ...Array(17).fill(0.1)]);
    expect(again.verdicts.slice(0, 2)).toEqual(['COMPLIANT', 'COMPLIANT']);
    expect(again.run).toMatchObject({ passed_requirements: 8, failed_requirements: 17 });
  });
});

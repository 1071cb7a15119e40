import { ErrorCode } from '@kb/common';
import { randomUUID } from 'node:crypto';
import { useTestDatabase } from '../../../../test/medium/database';
import { openCheckDatabase } from '../database/database';
import { runEvents } from './run-events';
import { RunsRepository, SubRequirementResult } from './runs.repository';
import { subResult } from './fixtures';

// Reviews of requirements (decisions.md "Review of check results") on a real PostgreSQL: set,
// replace, clear, 404/409, outdated after a new result, the review summary and the webhook outbox,
// and another organization's runs and requirements staying invisible.

const ORG = 'org-reviews-a';
const OTHER_ORG = 'org-reviews-b';

const compliant = subResult('COMPLIANT');
const missing = subResult('NOT_FOUND');

describe('RunsRepository reviews on PostgreSQL', () => {
  const db = useTestDatabase('reviews', openCheckDatabase);
  let runs: RunsRepository;
  beforeAll(() => {
    runs = new RunsRepository(db(), runEvents);
  });

  /** A run of `results.length` requirements, triggered, with the given machine results stored (null = left pending). */
  async function checkedRun(orgId: string, results: Array<SubRequirementResult | null>) {
    const run = await runs.create(orgId, {
      projectId: randomUUID(),
      name: 'Run',
      handbookIds: [],
      requirements: results.map((_, i) => ({ text: `R${i}`, metadata: null })),
    });
    const t = await runs.trigger(orgId, run.id, { reprocess: false, skipBreakdown: true });
    for (const [i, r] of results.entries()) {
      if (!r) continue;
      await runs.claim(orgId, run.id, t.run.generation, t.requirementIds[i]);
      expect((await runs.complete(orgId, run.id, t.run.generation, t.requirementIds[i], [r])).outcome).toBe('stored');
    }
    return { run, generation: t.run.generation, ids: t.requirementIds };
  }
  const events = async (runId: string) =>
    await db().query<{ type: string; payload: { org_id: string; data: any } }[]>(
      `SELECT type, payload FROM webhook_outbox WHERE resource_key = $1 ORDER BY seq`,
      [`check_run:${runId}`],
    );

  it('sets and replaces a review, counts it in the summary and enqueues one event per change', async () => {
    const { run, ids } = await checkedRun(ORG, [compliant, missing, compliant]);
    expect((await runs.findRun(ORG, run.id))!.review_summary).toEqual({ reviewed: 0, passed: 2, failed: 1 });

    const first = await runs.setReview(ORG, run.id, ids[0], { decision: 'fail', reviewer: 'Dana', comment: 'old edition' });
    expect(first.requirement).toMatchObject({
      id: ids[0],
      review_decision: 'fail',
      review_reviewer: 'Dana',
      review_comment: 'old edition',
      review_outdated: false,
    });
    expect(first.requirement.reviewed_at).toBeInstanceOf(Date);
    expect(first.subs.map((s) => s.text)).toEqual(['a']);
    const after = (await runs.findRun(ORG, run.id))!;
    expect(after.review_summary).toEqual({ reviewed: 1, passed: 1, failed: 2 });
    // The machine's counters are untouched.
    expect(after).toMatchObject({ passed_requirements: 2, failed_requirements: 1 });

    const replaced = await runs.setReview(ORG, run.id, ids[0], { decision: 'pass', reviewer: 'Lee', comment: null });
    expect(replaced.requirement).toMatchObject({ review_decision: 'pass', review_reviewer: 'Lee', review_comment: null });
    await runs.setReview(ORG, run.id, ids[1], { decision: 'pass', reviewer: 'Lee', comment: null });
    expect((await runs.findRun(ORG, run.id))!.review_summary).toEqual({ reviewed: 2, passed: 3, failed: 0 });
    expect((await runs.listRuns(ORG, null, 200, 0)).rows.find((r) => r.id === run.id)!.review_summary).toEqual({ reviewed: 2, passed: 3, failed: 0 });

    const outbox = await events(run.id);
    expect(outbox.map((e) => e.type)).toEqual([
      'check_run.completed',
      'check_run.requirement_reviewed',
      'check_run.requirement_reviewed',
      'check_run.requirement_reviewed',
    ]);
    expect(outbox[1].payload.org_id).toBe(ORG);
    expect(outbox[1].payload.data).toMatchObject({
      id: ids[0],
      run_id: run.id,
      status: 'completed',
      review: { decision: 'fail', reviewer: 'Dana', comment: 'old edition', outdated: false },
    });
    expect(outbox[1].payload.data.sub_requirements).toHaveLength(1);
    expect(outbox[2].payload.data.review).toMatchObject({ decision: 'pass', reviewer: 'Lee', comment: null });
  });

  it('clears a review (idempotently: a second clear changes nothing and enqueues nothing)', async () => {
    const { run, ids } = await checkedRun(ORG, [missing]);
    await runs.setReview(ORG, run.id, ids[0], { decision: 'pass', reviewer: 'Dana', comment: null });
    expect(await runs.clearReview(ORG, run.id, ids[0])).toBe(true);
    const [{ requirement }] = await runs.listRequirements(ORG, run.id);
    expect(requirement).toMatchObject({ review_decision: null, review_reviewer: null, review_comment: null, reviewed_at: null, review_outdated: false });
    expect(await runs.clearReview(ORG, run.id, ids[0])).toBe(false);
    expect((await runs.findRun(ORG, run.id))!.review_summary).toEqual({ reviewed: 0, passed: 0, failed: 1 });
    const outbox = await events(run.id);
    expect(outbox.map((e) => e.type)).toEqual(['check_run.completed', 'check_run.requirement_reviewed', 'check_run.requirement_reviewed']);
    expect(outbox[2].payload.data).toMatchObject({ id: ids[0], review: null });
  });

  it('refuses a requirement that is not completed (409) and unknown ones (404)', async () => {
    const { run, ids } = await checkedRun(ORG, [compliant, null]);
    await expect(runs.setReview(ORG, run.id, ids[1], { decision: 'pass', reviewer: 'Dana', comment: null })).rejects.toMatchObject({
      code: ErrorCode.CONFLICT,
    });
    await expect(runs.clearReview(ORG, run.id, ids[1])).rejects.toMatchObject({ code: ErrorCode.CONFLICT });
    await expect(runs.setReview(ORG, run.id, randomUUID(), { decision: 'pass', reviewer: 'Dana', comment: null })).rejects.toMatchObject({
      code: ErrorCode.NOT_FOUND,
    });
    await expect(runs.setReview(ORG, randomUUID(), ids[0], { decision: 'pass', reviewer: 'Dana', comment: null })).rejects.toMatchObject({
      code: ErrorCode.NOT_FOUND,
    });
    // A requirement of another run of the same org is not found under this run.
    const other = await checkedRun(ORG, [compliant]);
    await expect(runs.setReview(ORG, run.id, other.ids[0], { decision: 'pass', reviewer: 'Dana', comment: null })).rejects.toMatchObject({
      code: ErrorCode.NOT_FOUND,
    });
    expect((await events(run.id)).map((e) => e.type)).toEqual([]);
  });

  it("never reads or changes another organization's run or requirement", async () => {
    const { run, ids } = await checkedRun(ORG, [compliant]);
    await runs.setReview(ORG, run.id, ids[0], { decision: 'fail', reviewer: 'Dana', comment: null });
    await expect(runs.setReview(OTHER_ORG, run.id, ids[0], { decision: 'pass', reviewer: 'Eve', comment: null })).rejects.toMatchObject({
      code: ErrorCode.NOT_FOUND,
    });
    await expect(runs.clearReview(OTHER_ORG, run.id, ids[0])).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND });
    expect(await runs.findRun(OTHER_ORG, run.id)).toBeNull();
    expect(await runs.listRequirements(OTHER_ORG, run.id)).toEqual([]);
    const [{ requirement }] = await runs.listRequirements(ORG, run.id);
    expect(requirement).toMatchObject({ review_decision: 'fail', review_reviewer: 'Dana' });
    // The other org's own run with the same shape is counted on its own.
    const foreign = await checkedRun(OTHER_ORG, [compliant]);
    expect((await runs.findRun(OTHER_ORG, foreign.run.id))!.review_summary).toEqual({ reviewed: 0, passed: 1, failed: 0 });
  });

  it('a review becomes outdated when the requirement is checked again, and the summary falls back to the machine', async () => {
    const { run, ids } = await checkedRun(ORG, [compliant, compliant]);
    await runs.setReview(ORG, run.id, ids[0], { decision: 'fail', reviewer: 'Dana', comment: null });
    expect((await runs.findRun(ORG, run.id))!.review_summary).toEqual({ reviewed: 1, passed: 1, failed: 1 });
    const again = await runs.trigger(ORG, run.id, { reprocess: true, skipBreakdown: true });
    // While it is being checked again the requirement is pending: not reviewable, kept review not yet outdated.
    let [first] = await runs.listRequirements(ORG, run.id);
    expect(first.requirement).toMatchObject({ status: 'pending', review_decision: 'fail', review_outdated: false });
    await expect(runs.setReview(ORG, run.id, ids[0], { decision: 'pass', reviewer: 'Dana', comment: null })).rejects.toMatchObject({
      code: ErrorCode.CONFLICT,
    });
    for (const id of again.requirementIds) {
      await runs.claim(ORG, run.id, again.run.generation, id);
      await runs.complete(ORG, run.id, again.run.generation, id, [compliant]);
    }
    [first] = await runs.listRequirements(ORG, run.id);
    expect(first.requirement).toMatchObject({ status: 'completed', review_decision: 'fail', review_outdated: true });
    expect((await runs.findRun(ORG, run.id))!.review_summary).toEqual({ reviewed: 0, passed: 2, failed: 0 });
    // A new review is current again.
    await runs.setReview(ORG, run.id, ids[0], { decision: 'fail', reviewer: 'Dana', comment: null });
    [first] = await runs.listRequirements(ORG, run.id);
    expect(first.requirement.review_outdated).toBe(false);
    expect((await runs.findRun(ORG, run.id))!.review_summary).toEqual({ reviewed: 1, passed: 1, failed: 1 });
  });
});

import { ErrorCode } from '@kb/common';
import { randomUUID } from 'node:crypto';
import { useTestDatabase } from '../../../../test/medium/database';
import { openCheckDatabase } from '../database/database';
import { compareRequirements } from './run-compare';
import { runEvents } from './run-events';
import { RunsRepository, SubRequirementResult } from './runs.repository';
import { subResult } from './fixtures';

// Re-running and comparing check runs (decisions.md "Re-running and comparing check runs") on a real
// PostgreSQL: the rerun's copy of requirements, metadata, order and handbook ids; source_run_id;
// another organization's run staying invisible; and a comparison of stored results.

const ORG = 'org-rerun-a';
const OTHER_ORG = 'org-rerun-b';
const HANDBOOK = randomUUID();
const source = { handbook_id: HANDBOOK, node_id: `${HANDBOOK}:3`, title: 'plan.md', start_page: null, end_page: null, section: null };

const compliant = subResult('COMPLIANT', { justification: 'Stated.\nEvidence: "Helmets are worn."', sources: [source] });
const missing = subResult('NOT_FOUND', { justification: 'Not found.' });

describe('RunsRepository rerun on PostgreSQL', () => {
  const db = useTestDatabase('rerun', openCheckDatabase);
  let runs: RunsRepository;
  beforeAll(() => {
    runs = new RunsRepository(db(), runEvents);
  });

  /** Triggers `runId` and stores the given result for each requirement (null = left pending). */
  async function check(orgId: string, runId: string, results: Array<SubRequirementResult | null>) {
    const t = await runs.trigger(orgId, runId, { reprocess: false, skipBreakdown: true });
    for (const [i, r] of results.entries()) {
      if (!r) continue;
      await runs.claim(orgId, runId, t.run.generation, t.requirementIds[i]);
      expect((await runs.complete(orgId, runId, t.run.generation, t.requirementIds[i], [r])).outcome).toBe('stored');
    }
  }

  it('copies project, handbook ids and requirements (text, metadata, order) into a pending run naming its source', async () => {
    const projectId = randomUUID();
    const original = await runs.create(ORG, {
      projectId,
      name: 'Tender',
      handbookIds: [HANDBOOK],
      requirements: [
        { text: 'Helmets are worn.', metadata: { ref: '4.1' } },
        { text: 'Scaffolds are inspected.', metadata: null },
        { text: 'Helmets are worn.', metadata: { ref: '9.9' } },
      ],
    });
    await check(ORG, original.id, [compliant, missing, null]);
    await runs.setReview(ORG, original.id, (await runs.listRequirements(ORG, original.id))[0].requirement.id, {
      decision: 'fail',
      reviewer: 'Dana',
      comment: null,
    });

    const rerun = await runs.rerun(ORG, original.id, 'Tender (rerun)');
    expect(rerun).toMatchObject({
      org_id: ORG,
      project_id: projectId,
      name: 'Tender (rerun)',
      status: 'pending',
      handbook_ids: [HANDBOOK],
      total_requirements: 3,
      processed_requirements: 0,
      passed_requirements: 0,
      failed_requirements: 0,
      source_run_id: original.id,
      review_summary: { reviewed: 0, passed: 0, failed: 0 },
    });
    expect(rerun.id).not.toBe(original.id);
    expect((await runs.findRun(ORG, original.id))!.source_run_id).toBeNull();

    const copied = await runs.listRequirements(ORG, rerun.id);
    expect(copied.map(({ requirement: r, subs }) => [r.order_index, r.text, r.metadata, r.status, r.passed, r.review_decision, subs.length])).toEqual([
      [0, 'Helmets are worn.', { ref: '4.1' }, 'pending', null, null, 0],
      [1, 'Scaffolds are inspected.', null, 'pending', null, null, 0],
      [2, 'Helmets are worn.', { ref: '9.9' }, 'pending', null, null, 0],
    ]);
    const originalIds = new Set((await runs.listRequirements(ORG, original.id)).map((r) => r.requirement.id));
    expect(copied.some((r) => originalIds.has(r.requirement.id))).toBe(false);

    // A rerun of a rerun names its own source.
    expect((await runs.rerun(ORG, rerun.id, 'again')).source_run_id).toBe(rerun.id);
  });

  it("refuses another organization's run and an unknown one as NOT_FOUND, creating nothing", async () => {
    const run = await runs.create(ORG, { projectId: randomUUID(), name: 'Mine', handbookIds: [], requirements: [{ text: 'R', metadata: null }] });
    await expect(runs.rerun(OTHER_ORG, run.id, 'x')).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND });
    await expect(runs.rerun(ORG, randomUUID(), 'x')).rejects.toMatchObject({ code: ErrorCode.NOT_FOUND });
    const [{ n }] = await db().query(`SELECT count(*)::int AS n FROM check_runs WHERE org_id = $1`, [OTHER_ORG]);
    expect(n).toBe(0);
  });

  it('compares stored results: a requirement that failed and now passes is listed with both outcomes', async () => {
    const original = await runs.create(ORG, {
      projectId: randomUUID(),
      name: 'Before',
      handbookIds: [],
      requirements: [
        { text: 'Helmets are worn.', metadata: null },
        { text: 'Scaffolds are inspected.', metadata: null },
      ],
    });
    await check(ORG, original.id, [missing, missing]);
    const rerun = await runs.rerun(ORG, original.id, 'After');
    await check(ORG, rerun.id, [compliant, missing]);

    const cmp = compareRequirements(await runs.listRequirements(ORG, original.id), await runs.listRequirements(ORG, rerun.id));
    expect(cmp.summary).toEqual({ unchanged: 1, changed: 1, only_in_run: 0, only_in_with: 0 });
    expect(cmp.changes).toEqual([
      {
        order_index: 0,
        text: 'Helmets are worn.',
        before: { result: 'fail', score: 0.1, evidence: [], sources: [] },
        after: { result: 'pass', score: 0.9, evidence: ['Helmets are worn.'], sources: [source] },
      },
    ]);
  });
});

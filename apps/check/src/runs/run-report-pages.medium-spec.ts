import { randomUUID } from 'node:crypto';
import { useTestDatabase } from '../../../../test/medium/database';
import { openCheckDatabase } from '../database/database';
import { runEvents } from './run-events';
import { RunsRepository, SubRequirementResult } from './runs.repository';
import { subResult } from './fixtures';

// The paged read behind reports (decisions.md "Reports", CheckRunsService.GetReportPage) on a real
// PostgreSQL: pages in order_index order that together are the whole run, each with only its own
// requirements' sub-requirements, and another organization's run reading as empty.

const ORG = 'org-report-a';
const OTHER_ORG = 'org-report-b';

const result = (i: number): SubRequirementResult[] => [
  subResult('COMPLIANT', { text: `R${i} part a`, justification: 'stated\nEvidence: "quoted"' }),
  subResult('NOT_FOUND', { text: `R${i} part b`, score: 0.2 }),
];

describe('RunsRepository report pages on PostgreSQL', () => {
  const db = useTestDatabase('report_pages', openCheckDatabase);
  let runs: RunsRepository;
  beforeAll(() => {
    runs = new RunsRepository(db(), runEvents);
  });

  it('pages through a run in order_index order; each page carries only its requirements’ sub-requirements; another org reads nothing', async () => {
    const n = 25;
    const run = await runs.create(ORG, {
      projectId: randomUUID(),
      name: 'Paged',
      handbookIds: [],
      requirements: Array.from({ length: n }, (_, i) => ({ text: `R${i}`, metadata: { ref: `ref-${i}` } })),
    });
    const t = await runs.trigger(ORG, run.id, { reprocess: false, skipBreakdown: true });
    // Every other requirement checked (two sub-requirements each); the rest stay pending.
    for (let i = 0; i < n; i += 2) {
      await runs.claim(ORG, run.id, t.run.generation, t.requirementIds[i]);
      expect((await runs.complete(ORG, run.id, t.run.generation, t.requirementIds[i], result(i))).outcome).toBe('stored');
    }
    const whole = await runs.listRequirements(ORG, run.id);
    const paged = [];
    for (let offset = 0; ; offset += 10) {
      const page = await runs.listRequirements(ORG, run.id, { offset, limit: 10 });
      for (const { requirement, subs } of page) expect(subs.every((s) => s.requirement_id === requirement.id)).toBe(true);
      paged.push(...page);
      if (page.length < 10) break;
    }
    expect(paged.map((p) => p.requirement.order_index)).toEqual(Array.from({ length: n }, (_, i) => i));
    expect(paged.map((p) => [p.requirement.id, p.subs.map((s) => s.text)])).toEqual(whole.map((p) => [p.requirement.id, p.subs.map((s) => s.text)]));
    expect(paged[2].subs.map((s) => s.text)).toEqual(['R2 part a', 'R2 part b']);
    expect(paged[3].subs).toEqual([]);
    expect(await runs.listRequirements(ORG, run.id, { offset: n, limit: 10 })).toEqual([]);
    expect(await runs.listRequirements(OTHER_ORG, run.id, { offset: 0, limit: 10 })).toEqual([]);
  });
});

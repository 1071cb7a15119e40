import { compareRequirements, outcomeOf, type ComparedRequirement } from './run-compare';
import { RUN_NAME_MAX_CHARS } from '@kb/common';
import { defaultRerunName } from './runs.service';

const src = (node: string, doc = 'd1') => ({
  handbook_id: doc,
  node_id: `${doc}:${node}`,
  title: `${doc}.md`,
  start_page: null,
  end_page: null,
  section: null,
});

/** A requirement at `order_index` with one sub-requirement per given score (each citing `sources`). */
function req(
  order_index: number,
  text: string,
  outcome: { passed?: boolean | null; scores?: number[]; sources?: ReturnType<typeof src>[]; quote?: string } = {},
): ComparedRequirement {
  const completed = outcome.passed !== undefined && outcome.passed !== null;
  return {
    requirement: { order_index, text, status: completed ? 'completed' : 'pending', passed: completed ? outcome.passed! : null },
    subs: completed
      ? (outcome.scores ?? [0.9]).map((score) => ({
          score,
          justification: outcome.quote ? `Explained.\nEvidence: "${outcome.quote}"` : 'Nothing found.',
          sources: outcome.sources ?? [],
        }))
      : [],
  };
}

describe('compareRequirements', () => {
  it('reports nothing for identical runs', () => {
    const a = [req(0, 'A', { passed: true, sources: [src('1')] }), req(1, 'B', { passed: false, scores: [0.4] })];
    expect(compareRequirements(a, a)).toEqual({ summary: { unchanged: 2, changed: 0, only_in_run: 0, only_in_with: 0 }, changes: [] });
  });

  it('matches by text whatever the order, and lists a result change with before = run, after = with', () => {
    const before = [req(0, 'Helmets are worn.', { passed: false, scores: [0.3] }), req(1, 'Scaffolds are inspected.', { passed: true })];
    const after = [
      req(0, 'Scaffolds are inspected.', { passed: true }),
      req(1, 'Helmets are worn.', { passed: true, scores: [0.95], sources: [src('4')], quote: 'Helmets must be worn.' }),
    ];
    const { summary, changes } = compareRequirements(before, after);
    expect(summary).toEqual({ unchanged: 1, changed: 1, only_in_run: 0, only_in_with: 0 });
    expect(changes).toEqual([
      {
        order_index: 0,
        text: 'Helmets are worn.',
        before: { result: 'fail', score: 0.3, evidence: [], sources: [] },
        after: { result: 'pass', score: 0.95, evidence: ['Helmets must be worn.'], sources: [src('4')] },
      },
    ]);
  });

  it('pairs equal texts by order_index (k-th with k-th)', () => {
    const before = [req(0, 'Same', { passed: true }), req(1, 'Other', { passed: true }), req(2, 'Same', { passed: false })];
    const after = [req(0, 'Same', { passed: true }), req(1, 'Same', { passed: true }), req(2, 'Other', { passed: true })];
    const { summary, changes } = compareRequirements(before, after);
    expect(summary).toEqual({ unchanged: 2, changed: 1, only_in_run: 0, only_in_with: 0 });
    expect(changes.map((c) => [c.order_index, c.before?.result, c.after?.result])).toEqual([[2, 'fail', 'pass']]);
  });

  it('lists a score band change (below / at or above 0.7) and ignores a move within a band', () => {
    const before = [
      req(0, 'Band', { passed: false, scores: [0.69] }),
      req(1, 'Within', { passed: false, scores: [0.2] }),
      req(2, 'Edge', { passed: true, scores: [0.7] }),
    ];
    const after = [
      req(0, 'Band', { passed: false, scores: [0.7] }),
      req(1, 'Within', { passed: false, scores: [0.6] }),
      req(2, 'Edge', { passed: true, scores: [0.99] }),
    ];
    const { summary, changes } = compareRequirements(before, after);
    expect(summary).toEqual({ unchanged: 2, changed: 1, only_in_run: 0, only_in_with: 0 });
    expect(changes.map((c) => [c.text, c.before?.score, c.after?.score])).toEqual([['Band', 0.69, 0.7]]);
  });

  it('uses the lowest sub-requirement score', () => {
    expect(outcomeOf(req(0, 'X', { passed: false, scores: [0.9, 0.5, 0.8] })).score).toBe(0.5);
  });

  it('lists a change of first source only (same result and band)', () => {
    const before = [req(0, 'S', { passed: true, sources: [src('1'), src('2')] }), req(1, 'T', { passed: true, sources: [src('1'), src('2')] })];
    const after = [req(0, 'S', { passed: true, sources: [src('1', 'd2')] }), req(1, 'T', { passed: true, sources: [src('1'), src('3')] })];
    const { summary, changes } = compareRequirements(before, after);
    expect(summary).toEqual({ unchanged: 1, changed: 1, only_in_run: 0, only_in_with: 0 });
    expect(changes[0].text).toBe('S');
  });

  it('does not count the same quote in a newer version of the same document as a move of the first source', () => {
    // d2 is the next version of d1 (a revision); d3 is another document.
    const same = (a: string, b: string) => a === b || [a, b].every((x) => x === 'd1' || x === 'd2');
    const quote = 'Scaffolds are inspected before each shift.';
    const before = [req(0, 'R', { passed: true, sources: [src('1', 'd1')], quote }), req(1, 'Q', { passed: true, sources: [src('1', 'd1')], quote })];
    const after = [
      req(0, 'R', { passed: true, sources: [src('7', 'd2')], quote: ' Scaffolds are inspected\nbefore each shift.' }),
      req(1, 'Q', { passed: true, sources: [src('7', 'd2')], quote: 'Scaffolds are inspected weekly.' }),
    ];
    expect(compareRequirements(before, after, same).changes.map((c) => c.text)).toEqual(['Q']);
    // Without version chains, the new chunk is a move; another document with the same quote stays a move.
    expect(compareRequirements(before, after).summary.changed).toBe(2);
    const elsewhere = [req(0, 'R', { passed: true, sources: [src('1', 'd3')], quote }), req(1, 'Q', { passed: true, sources: [src('1', 'd1')], quote })];
    expect(compareRequirements(before, elsewhere, same).changes.map((c) => c.text)).toEqual(['R']);
  });

  it('compares a requirement not completed as pending with no score', () => {
    const { changes } = compareRequirements([req(0, 'P')], [req(0, 'P', { passed: true })]);
    expect(changes[0].before).toEqual({ result: 'pending', score: null, evidence: [], sources: [] });
    expect(changes[0].after?.result).toBe('pass');
    expect(compareRequirements([req(0, 'P')], [req(0, 'P')]).summary.unchanged).toBe(1);
  });

  it('counts and lists unmatched requirements with before or after null (run order first, then with order)', () => {
    const before = [req(0, 'Gone', { passed: true }), req(1, 'Kept', { passed: true }), req(2, 'Twice', { passed: true }), req(3, 'Twice', { passed: true })];
    const after = [req(0, 'New', { passed: false }), req(1, 'Kept', { passed: true }), req(2, 'Twice', { passed: true })];
    const { summary, changes } = compareRequirements(before, after);
    expect(summary).toEqual({ unchanged: 2, changed: 0, only_in_run: 2, only_in_with: 1 });
    expect(changes.map((c) => [c.order_index, c.text, c.before === null, c.after === null])).toEqual([
      [0, 'Gone', false, true],
      [3, 'Twice', false, true],
      [0, 'New', true, false],
    ]);
  });

  it('lists each cited chunk once, in order', () => {
    const r: ComparedRequirement = {
      requirement: { order_index: 0, text: 'X', status: 'completed', passed: true },
      subs: [
        { score: 0.9, justification: 'a\nEvidence: "one"', sources: [src('1'), src('2')] },
        { score: 0.8, justification: 'b', sources: [src('2'), src('3')] },
      ],
    };
    expect(outcomeOf(r)).toEqual({ result: 'pass', score: 0.8, evidence: ['one'], sources: [src('1'), src('2'), src('3')] });
  });
});

describe('defaultRerunName', () => {
  it("appends ' (rerun)' and clips a long name so the whole fits the run name limit", () => {
    expect(defaultRerunName('Tender 2026-14')).toBe('Tender 2026-14 (rerun)');
    const long = defaultRerunName('x'.repeat(RUN_NAME_MAX_CHARS));
    expect(long).toHaveLength(RUN_NAME_MAX_CHARS);
    expect(long.endsWith('x (rerun)')).toBe(true);
  });
});

import { effectiveResult, machineResult, matches, NO_FILTER, reviewQueue, scoreOf, type QueueRequirement } from './queue';

const req = (id: string, order: number, scores: [number, string][], review: QueueRequirement['review'] = null, status = 'completed'): QueueRequirement => ({
  id,
  order_index: order,
  status,
  sub_requirements: scores.map(([score, s]) => ({ score, status: s })),
  review,
});

describe('review queue', () => {
  const a = req('a', 0, [
    [0.9, 'comply'],
    [0.4, 'comply'],
  ]); // pass, score 0.4
  const b = req('b', 1, [[0.8, 'comply']]); // pass, confident
  const c = req('c', 2, [[0.2, 'not-comply']], { decision: 'pass', outdated: false }); // machine fail, reviewed pass
  const d = req('d', 3, [], null, 'pending');
  const e = req('e', 4, [[0.75, 'not-comply']], { decision: 'pass', outdated: true }); // confident fail, review outdated

  it('reads the machine result and score as the reports do: pass only when every sub-requirement complies, the lowest score', () => {
    expect([a, b, c, d, e].map(machineResult)).toEqual(['pass', 'pass', 'fail', 'pending', 'fail']);
    expect([a, b, c, d, e].map(scoreOf)).toEqual([0.4, 0.8, 0.2, null, 0.75]);
    expect(machineResult(req('x', 9, []))).toBe('fail');
  });

  it("counts a current review's decision, not an outdated one", () => {
    expect(effectiveResult(c)).toBe('pass');
    expect(effectiveResult(e)).toBe('fail');
  });

  it('puts the least confident first, pending after them, and folds confident verdicts apart', () => {
    const q = reviewQueue([a, b, c, d, e]);
    expect(q.uncertain.map((r) => r.id)).toEqual(['c', 'a']);
    expect(q.pending.map((r) => r.id)).toEqual(['d']);
    expect(q.confident.map((r) => r.id)).toEqual(['e', 'b']);
  });

  it('filters by result (with reviews), reviewed or not (an outdated review is not current), and outdated', () => {
    const ids = (f: Partial<typeof NO_FILTER>) => [a, b, c, d, e].filter((r) => matches(r, { ...NO_FILTER, ...f })).map((r) => r.id);
    expect(ids({ result: 'pass' })).toEqual(['a', 'b', 'c']);
    expect(ids({ result: 'fail' })).toEqual(['e']);
    expect(ids({ reviewed: 'reviewed' })).toEqual(['c']);
    expect(ids({ reviewed: 'unreviewed' })).toEqual(['a', 'b', 'd', 'e']);
    expect(ids({ outdatedOnly: true })).toEqual(['e']);
  });
});

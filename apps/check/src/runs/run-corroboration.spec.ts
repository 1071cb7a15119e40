import { corroborateRun, CORROBORATION_MIN_REQUIREMENTS, type CorroborationRequirement } from './run-corroboration';

const pass = (judgeScore: number, pCompliant: number | null): CorroborationRequirement => ({
  passed: true,
  subs: [{ verdict: 'COMPLIANT', judgeScore, pCompliant }],
});
const fail: CorroborationRequirement = {
  passed: false,
  subs: [
    { verdict: 'COMPLIANT', judgeScore: 0.5, pCompliant: 0.9 },
    { verdict: 'NOT_FOUND', judgeScore: 0.4, pCompliant: 0.1 },
  ],
};

describe('corroborateRun', () => {
  it('raises only the COMPLIANT sub-requirements of passing requirements, to P(COMPLIANT), when enough of the run passes', () => {
    const run = [pass(0.6, 0.9), ...Array(9).fill(pass(0.6, 0.75)), ...Array(CORROBORATION_MIN_REQUIREMENTS - 10).fill(fail)];
    const r = corroborateRun(run);
    expect(r).toMatchObject({ corroborated: true, passShare: 0.5 });
    expect(r.scores[0]).toEqual([0.9]);
    expect(r.scores[1]).toEqual([0.75]);
    // The failing requirement's COMPLIANT part keeps its own confidence, though its P(COMPLIANT) is 0.9.
    expect(r.scores[10]).toEqual([0.5, 0.4]);
  });

  it('reads the pass share: 6 of 20 corroborate, 5 of 20 do not; a failing requirement is never raised', () => {
    const at = (passes: number) => corroborateRun([...Array(passes).fill(pass(0.6, 0.9)), ...Array(20 - passes).fill(fail)]);
    const six = at(6);
    expect(six.corroborated).toBe(true);
    expect(six.scores.slice(0, 6)).toEqual(Array(6).fill([0.9]));
    expect(six.scores[6]).toEqual([0.5, 0.4]);
    const five = at(5);
    expect(five.corroborated).toBe(false);
    expect(five.scores.slice(0, 5)).toEqual(Array(5).fill([0.6]));
  });

  it('never lowers a confidence, raises only to 0.7 or more, leaves a verdict that may not be raised alone, and needs a run of at least 20', () => {
    const r = corroborateRun([pass(0.8, 0.7), pass(0.5, null), ...Array(18).fill(pass(0.6, 0.65))]);
    expect(r.corroborated).toBe(true);
    expect(r.scores[0]).toEqual([0.8]);
    expect(r.scores[1]).toEqual([0.5]);
    expect(r.scores[2]).toEqual([0.6]);
    expect(r.raised.flat().some(Boolean)).toBe(false);
    const small = corroborateRun(Array(CORROBORATION_MIN_REQUIREMENTS - 1).fill(pass(0.6, 0.95)));
    expect(small).toMatchObject({ corroborated: false, passShare: 1 });
    expect(small.scores[0]).toEqual([0.6]);
    expect(corroborateRun([])).toEqual({ corroborated: false, passShare: 0, raised: [], scores: [] });
  });
});

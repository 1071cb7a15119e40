import { CORROBORATION_MIN_REQUIREMENTS, readRun, type CorroborationRequirement, type CorroborationSub } from './run-corroboration';

const sub = (judgeScore: number, pCompliant: number | null, raisable = true, verdict = 'COMPLIANT'): CorroborationSub => ({
  verdict,
  judgeScore,
  pCompliant,
  raisable,
});
const pass = (...subs: CorroborationSub[]): CorroborationRequirement => ({ passed: true, subs });
const fail: CorroborationRequirement = { passed: false, subs: [sub(0.5, 0.9), sub(0.4, 0.1, false, 'NOT_FOUND')] };
const run = (passing: CorroborationRequirement[], total: number) => readRun([...passing, ...Array(total - passing.length).fill(fail)]);

describe('readRun', () => {
  it('corroborated (≥ 30 % pass): raises unsure, raisable COMPLIANT parts of passes to P(COMPLIANT) ≥ 0.7, nothing else', () => {
    const r = run(
      [pass(sub(0.6, 0.9)), pass(sub(0.6, 0.65)), pass(sub(0.6, 0.9, false)), pass(sub(0.8, 0.75)), pass(sub(0.5, null)), pass(sub(0.6, 0.75))],
      20,
    );
    expect(r).toMatchObject({ reading: 'corroborated', passShare: 0.3 });
    expect(r.requirements.slice(0, 6).map((x) => [x.passed, x.subs[0].score, x.subs[0].change])).toEqual([
      [true, 0.9, 'raised'],
      [true, 0.6, null], // P(COMPLIANT) below 0.7
      [true, 0.6, null], // capped by a rule
      [true, 0.8, null], // already confident: never lowered
      [true, 0.5, null], // a chat-model verdict
      [true, 0.75, 'raised'],
    ]);
    // A failing requirement's COMPLIANT part keeps its confidence, though its P(COMPLIANT) is 0.9.
    expect(r.requirements[6].subs.map((s) => s.score)).toEqual([0.5, 0.4]);
  });

  it('doubtful (< 20 % pass): unsure passes that would not be raised turn NOT_FOUND below 0.7 and fail; the rest stand', () => {
    const r = run([pass(sub(0.6, 0.65)), pass(sub(0.6, 0.9, false)), pass(sub(0.6, 0.9)), pass(sub(0.9, 0.6), sub(0.5, null))], 25);
    expect(r).toMatchObject({ reading: 'doubtful', passShare: 0.16 });
    expect(r.requirements[0]).toEqual({ passed: false, subs: [{ verdict: 'NOT_FOUND', score: expect.closeTo(0.35) as number, change: 'doubted' }] });
    expect(r.requirements[1].passed).toBe(false);
    expect(r.requirements[1].subs[0]).toMatchObject({ verdict: 'NOT_FOUND', change: 'doubted' });
    expect(r.requirements[1].subs[0].score).toBeCloseTo(0.1);
    expect(r.requirements[2]).toEqual({ passed: true, subs: [{ verdict: 'COMPLIANT', score: 0.6, change: null }] });
    // Confident parts and chat-model verdicts are never doubted.
    expect(r.requirements[3].passed).toBe(true);
    // A doubted verdict is never confident, however low P(COMPLIANT) was.
    expect(run([pass(sub(0.6, 0.2, false))], 25).requirements[0].subs[0].score).toBe(0.69);
  });

  it('between 20 and 30 %, or with fewer than 20 requirements, the single verdicts stand', () => {
    const between = run(Array(5).fill(pass(sub(0.6, 0.9))), 20);
    expect(between.reading).toBe('none');
    expect(between.requirements.flatMap((x) => x.subs.map((s) => s.change)).every((c) => c === null)).toBe(true);
    const small = readRun(Array(CORROBORATION_MIN_REQUIREMENTS - 1).fill(pass(sub(0.6, 0.95))));
    expect(small).toMatchObject({ reading: 'none', passShare: 1 });
    expect(small.requirements[0].subs[0].score).toBe(0.6);
    const fewPasses = readRun([pass(sub(0.6, 0.5)), ...Array(CORROBORATION_MIN_REQUIREMENTS - 2).fill(fail)]);
    expect(fewPasses.reading).toBe('none');
    expect(readRun([])).toEqual({ reading: 'none', passShare: 0, requirements: [] });
  });
});

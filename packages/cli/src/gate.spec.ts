import { requirementOutcome, runGate, verdictGate } from './gate';

// `--fail-on` decides what a CI job sees: each rule of the README's "Exit codes" as a user reads it.
const sub = (status: string, score: number) => ({ status, score }) as never;
const req = (status: string, subs: Array<[string, number]>, review: { decision: 'pass' | 'fail'; outdated: boolean } | null = null) =>
  ({ status, sub_requirements: subs.map(([s, n]) => sub(s, n)), review }) as never;

describe('kb --fail-on: the requirements gate', () => {
  it('judges a requirement by its sub-requirements, low confidence as unsure, unchecked as fail', () => {
    expect(
      requirementOutcome(
        req('completed', [
          ['comply', 0.9],
          ['comply', 0.8],
        ]),
      ),
    ).toBe('pass');
    expect(
      requirementOutcome(
        req('completed', [
          ['comply', 0.9],
          ['not_comply', 0.95],
        ]),
      ),
    ).toBe('fail');
    expect(
      requirementOutcome(
        req('completed', [
          ['comply', 0.9],
          ['comply', 0.69],
        ]),
      ),
    ).toBe('unsure');
    expect(requirementOutcome(req('completed', []))).toBe('fail');
    expect(requirementOutcome(req('failed', []))).toBe('fail');
    expect(requirementOutcome(req('pending', []))).toBe('fail');
  });

  it("lets a person's current review decide, but not an outdated one", () => {
    expect(requirementOutcome(req('completed', [['not_comply', 0.9]], { decision: 'pass', outdated: false }))).toBe('pass');
    expect(requirementOutcome(req('completed', [['comply', 0.5]], { decision: 'pass', outdated: false }))).toBe('pass');
    expect(requirementOutcome(req('completed', [['comply', 0.9]], { decision: 'fail', outdated: false }))).toBe('fail');
    expect(requirementOutcome(req('completed', [['not_comply', 0.9]], { decision: 'pass', outdated: true }))).toBe('fail');
  });

  it('trips on a failed requirement with "fail", and also on an unsure one with "unsure"', () => {
    const unsureOnly = { requirements: [req('completed', [['comply', 0.9]]), req('completed', [['comply', 0.4]])] } as never;
    expect(runGate(unsureOnly, 'fail')).toEqual({ failed: 0, unsure: 1, total: 2, tripped: false });
    expect(runGate(unsureOnly, 'unsure')).toEqual({ failed: 0, unsure: 1, total: 2, tripped: true });
    const failing = { requirements: [req('completed', [['not_comply', 0.9]])] } as never;
    expect(runGate(failing, 'fail').tripped).toBe(true);
  });

  it('fails a verdict that is not COMPLIANT, and a COMPLIANT one below 0.7 only with "unsure"', () => {
    expect(verdictGate({ verdict: 'COMPLIANT', confidence: 0.9 }, 'unsure').tripped).toBe(false);
    expect(verdictGate({ verdict: 'COMPLIANT', confidence: 0.7 }, 'unsure').tripped).toBe(false);
    expect(verdictGate({ verdict: 'COMPLIANT', confidence: 0.69 }, 'fail').tripped).toBe(false);
    expect(verdictGate({ verdict: 'COMPLIANT', confidence: 0.69 }, 'unsure').tripped).toBe(true);
    expect(verdictGate({ verdict: 'NOT_FOUND', confidence: 0.9 }, 'fail').tripped).toBe(true);
    expect(verdictGate({ verdict: 'CONTRADICTS', confidence: 0.3 }, 'fail').tripped).toBe(true);
  });
});

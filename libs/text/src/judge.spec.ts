import { judgeRequirement } from './judge';
import { passageOf } from './fixtures';
import type { Judgement } from './judge';

const site = passageOf([
  [3, 'Site Safety Rules\nGuardrails shall be 42 inches high.'],
  [4, 'Hard hats are required at all times. Smoking is prohibited on site. Incidents shall be reported within 24 hours.'],
]);

function expectWellFormed(j: Judgement) {
  expect(j.confidence).toBeGreaterThanOrEqual(0);
  expect(j.confidence).toBeLessThanOrEqual(1);
  expect(j.explanation.length).toBeGreaterThan(20);
  expect(j.recommendation === null).toBe(j.verdict === 'COMPLIANT');
  if (j.verdict === 'NOT_FOUND') expect(j.evidence).toBeNull();
  else {
    expect(j.evidence).not.toBeNull();
    const e = j.evidence!;
    expect(e.passage.text.slice(e.start, e.end)).toBe(e.quote);
    expect(j.explanation).toContain(e.quote.replace(/\s+/g, ' '));
  }
  expect(j.usage.totalTokens).toBe(j.usage.promptTokens + j.usage.completionTokens);
}

describe('judgeRequirement', () => {
  it('COMPLIANT when the document states what the requirement asks', () => {
    const j = judgeRequirement('Top rails must be at least 42 inches high.', [site]);
    expectWellFormed(j);
    expect(j.verdict).toBe('COMPLIANT');
    expect(j.evidence!.quote).toBe('Guardrails shall be 42 inches high.');
    expect(j.evidence!.startPage).toBe(3);
  });

  it('never confidently COMPLIANT with a permission the document prohibits', () => {
    // Known limitation of the trained judge (docs/check.md): it reads this as NOT_FOUND, not CONTRADICTS.
    const j = judgeRequirement('Smoking is allowed in designated areas.', [site]);
    expectWellFormed(j);
    expect(j.verdict === 'COMPLIANT' && j.confidence >= 0.7).toBe(false);
    expect(j.verdict).not.toBe('COMPLIANT');
  });

  it('CONTRADICTS a height the document sets differently', () => {
    const j = judgeRequirement('Guardrails shall be 39 inches high.', [site]);
    expectWellFormed(j);
    expect(j.verdict).toBe('CONTRADICTS');
    expect(j.explanation).toContain('39 inches');
    expect(j.explanation).toContain('42 inches');
  });

  it('reads comparison words: "within 4 hours" is not met by "within 24 hours", "within 72 hours" is', () => {
    expect(judgeRequirement('Incidents must be reported within 4 hours.', [site]).verdict).toBe('CONTRADICTS');
    expect(judgeRequirement('Incidents must be reported within 72 hours.', [site]).verdict).toBe('COMPLIANT');
  });

  it('a negated requirement the document makes mandatory is never a confident COMPLIANT', () => {
    // Known limitation of the trained judge (docs/check.md): the verdict itself may be wrong here, the
    // confidence must then say it is not to be relied on.
    const j = judgeRequirement('Hard hats are never required on site.', [site]);
    expectWellFormed(j);
    expect(j.verdict === 'COMPLIANT' && j.confidence >= 0.7).toBe(false);
  });

  it('a sentence stating the requirement word for word is a confident COMPLIANT with that sentence as evidence', () => {
    const plan = passageOf([[1, 'The main gate is closed on Sundays. Visitors must sign in at the reception desk before entering the site.']]);
    const j = judgeRequirement('Visitors must sign in at the reception desk.', [plan]);
    expectWellFormed(j);
    expect(j.verdict).toBe('COMPLIANT');
    expect(j.confidence).toBeGreaterThanOrEqual(0.7);
    expect(j.evidence!.quote).toBe('Visitors must sign in at the reception desk before entering the site.');
    expect(j.explanation).toContain('word for word');
    // The same words negated are no verbatim statement.
    const negated = judgeRequirement('Visitors must sign in at the reception desk.', [passageOf([[1, 'Visitors must not sign in at the reception desk.']])]);
    expect(negated.verdict === 'COMPLIANT' && negated.confidence >= 0.7).toBe(false);
  });

  it('a prohibition against a sentence that makes the same thing mandatory is CONTRADICTS, never COMPLIANT', () => {
    const j = judgeRequirement('Hard hats must not be worn in the construction zone.', [
      passageOf([[1, 'Hard hats are required at all times in the construction zone.']]),
    ]);
    expectWellFormed(j);
    expect(j.verdict).toBe('CONTRADICTS');
    expect(j.evidence!.quote).toContain('Hard hats are required');
  });

  it('NOT_FOUND with no evidence and a recommendation when nothing addresses it', () => {
    const j = judgeRequirement('Fire extinguishers shall be placed every 75 feet.', [site]);
    expectWellFormed(j);
    expect(j.verdict).toBe('NOT_FOUND');
    expect(j.evidence).toBeNull();
    expect(j.recommendation).toMatch(/document/i);
    expect(j.recommendation).toMatch(/extinguishers/i);
  });

  it('NOT_FOUND when there are no passages', () => {
    const j = judgeRequirement('Guardrails shall be 42 inches high.', []);
    expectWellFormed(j);
    expect(j.verdict).toBe('NOT_FOUND');
    expect(j.confidence).toBeGreaterThanOrEqual(0.7);
  });
});

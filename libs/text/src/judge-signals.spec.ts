import { findVerbatim, resolveEvidence } from './align';
import { breakDownRequirement } from './breakdown';
import { passageOf } from './fixtures';
import { judgeRequirement } from './judge';

const plan = passageOf([
  [1, 'Site Access\nThe north gate is closed on weekends. Visitors must not enter the crane area.'],
  [2, 'Scaffold platforms shall be at least 1 m wide. Hot work permits are valid for 8 hours.'],
]);

describe('embedded judge contradiction signals', () => {
  it('antonyms: "open" against "closed"', () => {
    const j = judgeRequirement('The north gate must be open on weekends.', [plan]);
    expect(j.verdict).toBe('CONTRADICTS');
    expect(j.evidence!.quote).toBe('The north gate is closed on weekends.');
    expect(j.explanation).toMatch(/open.*closed/);
  });

  it('negation: an obligation against "must not"', () => {
    const j = judgeRequirement('Visitors must enter the crane area.', [plan]);
    expect(j.verdict).toBe('CONTRADICTS');
    expect(j.evidence!.quote).toContain('must not enter the crane area');
  });

  it('numbers with units: 1 m (39.4 in) does not meet "at least 48 inches", meets "at least 36 inches"', () => {
    expect(judgeRequirement('Scaffold platforms must be at least 48 inches wide.', [plan]).verdict).toBe('CONTRADICTS');
    expect(judgeRequirement('Scaffold platforms must be at least 36 inches wide.', [plan]).verdict).toBe('COMPLIANT');
    expect(judgeRequirement('Hot work permits must be valid for no more than 4 hours.', [plan]).verdict).toBe('CONTRADICTS');
  });

  it('low coverage: a requirement sharing only a common word is NOT_FOUND', () => {
    const j = judgeRequirement('Visitors must receive an induction video about asbestos removal.', [plan]);
    expect(j.verdict).toBe('NOT_FOUND');
    expect(j.evidence).toBeNull();
  });
});

describe('breakdown of compound requirements', () => {
  it('splits bullets under a lead-in, semicolons and modal clauses', () => {
    expect(breakDownRequirement('The contractor shall:\n- submit a safety plan\n- appoint a site supervisor')).toEqual([
      'The contractor shall submit a safety plan',
      'The contractor shall appoint a site supervisor',
    ]);
    expect(breakDownRequirement('Workers must wear hard hats; workers must wear gloves.')).toEqual(['Workers must wear hard hats', 'Workers must wear gloves']);
    expect(breakDownRequirement('Visitors must sign in and must wear a badge.')).toEqual(['Visitors must sign in', 'Visitors must wear a badge']);
    expect(breakDownRequirement('Workers must wear hard hats, safety glasses, and gloves.')).toEqual([
      'Workers must wear hard hats',
      'Workers must wear safety glasses',
      'Workers must wear gloves',
    ]);
  });
});

describe('verbatim evidence of a model quote', () => {
  const p = passageOf([[4, 'Smoking is   prohibited\non site. Guardrails shall be 42 inches high.']]);
  it('finds a quote up to whitespace and returns the exact characters', () => {
    const hit = findVerbatim(p.text, 'Smoking is prohibited on site.');
    expect(p.text.slice(hit!.start, hit!.end)).toBe('Smoking is   prohibited\non site.');
    expect(findVerbatim(p.text, 'Smoking is forbidden on site.')).toBeNull();
  });
  it('repairs a paraphrase to its sentence, and flags an unsupported quote', () => {
    expect(resolveEvidence('guardrails are 42 inches high', [p], 0, 'x')).toMatchObject({ resolution: 'repaired' });
    const r = resolveEvidence('Helmets are issued at the gate.', [p], 0, 'Guardrails must be 42 inches high.');
    expect(r!.resolution).toBe('unsupported');
    expect(p.text.slice(r!.start, r!.end)).toBe('Guardrails shall be 42 inches high.');
  });
});

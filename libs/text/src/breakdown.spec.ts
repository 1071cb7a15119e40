import { breakDownRequirement } from './breakdown';

describe('breakDownRequirement', () => {
  it('keeps a single requirement whole', () => {
    expect(breakDownRequirement('  The contractor shall maintain health and safety records.  ')).toEqual([
      'The contractor shall maintain health and safety records.',
    ]);
    expect(breakDownRequirement('Guardrails must be 42 inches high or higher')).toEqual(['Guardrails must be 42 inches high or higher']);
  });

  it('splits clauses joined by "and" that each carry a modal, keeping the subject', () => {
    expect(breakDownRequirement('The contractor shall install guardrails and shall inspect them weekly.')).toEqual([
      'The contractor shall install guardrails',
      'The contractor shall inspect them weekly',
    ]);
    expect(breakDownRequirement('The contractor shall submit a plan and the owner must approve it.')).toEqual([
      'The contractor shall submit a plan',
      'The owner must approve it',
    ]);
  });

  it('splits on semicolons and lists, prefixing the lead-in', () => {
    expect(breakDownRequirement('Workers must wear hard hats; must wear safety glasses')).toEqual([
      'Workers must wear hard hats',
      'Workers must wear safety glasses',
    ]);
    expect(breakDownRequirement('The contractor shall:\n1. inspect scaffolds daily;\n2. tag unsafe scaffolds; and\n3. keep inspection records.')).toEqual([
      'The contractor shall inspect scaffolds daily',
      'The contractor shall tag unsafe scaffolds',
      'The contractor shall keep inspection records',
    ]);
  });

  it('splits distinct objects of one verb', () => {
    expect(breakDownRequirement('Workers must wear hard hats, safety glasses, and gloves.')).toEqual([
      'Workers must wear hard hats',
      'Workers must wear safety glasses',
      'Workers must wear gloves',
    ]);
  });

  it('does not split choices or parentheses', () => {
    const text = 'The recipient may share information with advisers (including consultants, agents and lawyers).';
    expect(breakDownRequirement(text)).toEqual([text]);
    expect(breakDownRequirement('Provide one of the following:\n- a harness\n- a guardrail')).toHaveLength(1);
  });

  it('never returns an empty part and rejects blank input', () => {
    for (const r of ['A; ; B shall', 'x and y', '-']) {
      const parts = breakDownRequirement(r);
      expect(parts.length).toBeGreaterThanOrEqual(1);
      for (const p of parts) expect(p.trim()).not.toBe('');
    }
    expect(() => breakDownRequirement('   ')).toThrow(RangeError);
  });
});

import { evidenceOf, justificationOf, MAX_JUSTIFICATION } from './justification';

describe('stored justifications', () => {
  it('the quote written with an explanation reads back (whitespace collapsed)', () => {
    const stored = justificationOf('The plan says so.', 'Scaffolds shall be\n  inspected.');
    expect(stored).toBe('The plan says so.\nEvidence: "Scaffolds shall be inspected."');
    expect(evidenceOf(stored)).toBe('Scaffolds shall be inspected.');
  });

  it('no evidence: the explanation alone, and no quote reads back', () => {
    expect(justificationOf('No passage states it.', '')).toBe('No passage states it.');
    expect(evidenceOf(justificationOf('No passage states it.', null))).toBeNull();
  });

  it('a justification over the limit is clipped with "…"; the clipped quote keeps it', () => {
    const stored = justificationOf('Long.', 'x'.repeat(MAX_JUSTIFICATION));
    expect(stored).toHaveLength(MAX_JUSTIFICATION);
    expect(stored.endsWith('…')).toBe(true);
    expect(evidenceOf(stored)).toBe(`${'x'.repeat(MAX_JUSTIFICATION - 'Long.\nEvidence: "'.length - 1)}…`);
  });
});

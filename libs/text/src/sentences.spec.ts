import { splitSentences } from './sentences';

const texts = (t: string) => splitSentences(t).map((s) => s.text);

describe('splitSentences', () => {
  it('gives offsets that point at the exact sentence text', () => {
    const text = '  First sentence here.  Second one follows!\nThird?  ';
    const out = splitSentences(text);
    expect(out.map((s) => s.text)).toEqual(['First sentence here.', 'Second one follows!', 'Third?']);
    for (const s of out) expect(text.slice(s.start, s.end)).toBe(s.text);
  });

  it('does not split after abbreviations, decimals or section numbers', () => {
    expect(texts('Use PPE, e.g. gloves and goggles, i.e. full protection. See Sec. 4.2.1 for details. Load is 3.5 kg per No. 5 hook.')).toEqual([
      'Use PPE, e.g. gloves and goggles, i.e. full protection.',
      'See Sec. 4.2.1 for details.',
      'Load is 3.5 kg per No. 5 hook.',
    ]);
    expect(texts('Dr. Smith et al. approved it. Acme Inc. Ltd. agreed. J. Doe signed.')).toEqual([
      'Dr. Smith et al. approved it.',
      'Acme Inc. Ltd. agreed.',
      'J. Doe signed.',
    ]);
  });

  it('keeps a numbered heading with its text and splits list items', () => {
    expect(texts('4.2.1. Scope. The contractor shall comply.\n1. Inspect scaffolds daily\n2. Tag unsafe scaffolds\n- Keep records')).toEqual([
      '4.2.1. Scope.',
      'The contractor shall comply.',
      '1. Inspect scaffolds daily',
      '2. Tag unsafe scaffolds',
      '- Keep records',
    ]);
  });

  it('joins line-broken text and breaks at headings and blank lines', () => {
    const text = 'FALL PROTECTION\nGuardrails shall be installed at all\nopen edges of the slab. They shall be\ninspected weekly.\n\nNext paragraph';
    expect(texts(text)).toEqual([
      'FALL PROTECTION',
      'Guardrails shall be installed at all\nopen edges of the slab.',
      'They shall be\ninspected weekly.',
      'Next paragraph',
    ]);
  });

  it('returns nothing for empty or blank text', () => {
    expect(splitSentences('')).toEqual([]);
    expect(splitSentences(' \n\t ')).toEqual([]);
  });
});

import { analyze } from './analyze';
import { pagesOfSpan } from './pages';
import { countTokens } from './tokens';
import { passageOf } from './fixtures';

describe('analyze', () => {
  it('lowercases, removes stop words and stems (Porter2)', () => {
    expect(analyze('The Workers MUST wear their hard hats while working')).toEqual(['worker', 'wear', 'hard', 'hat', 'work']);
  });

  it('keeps numbers and splits hyphenated words', () => {
    expect(analyze('42-inch guardrails, 1,000 lbs')).toEqual(['42', 'inch', 'guardrail', '1000', 'lbs']);
  });

  it('gives no terms for function words only', () => {
    expect(analyze('it is not what it should be')).toEqual([]);
  });
});

describe('pagesOfSpan', () => {
  const p = passageOf([
    [3, 'Guardrails shall be 42 inches high.'],
    [4, 'Hard hats are required at all times.'],
  ]);

  it('finds the page of a span from pageSpans', () => {
    const start = p.text.indexOf('Hard hats');
    expect(pagesOfSpan(p, start, start + 9)).toEqual({ startPage: 4, endPage: 4 });
    expect(pagesOfSpan(p, 0, 10)).toEqual({ startPage: 3, endPage: 3 });
    expect(pagesOfSpan(p, 5, start + 4)).toEqual({ startPage: 3, endPage: 4 });
  });

  it('falls back to the passage pages without pageSpans', () => {
    expect(pagesOfSpan({ ...p, pageSpans: [] }, 40, 50)).toEqual({ startPage: 3, endPage: 4 });
    expect(pagesOfSpan({ ...p, pageSpans: [], startPage: null, endPage: null }, 0, 5)).toEqual({ startPage: null, endPage: null });
  });
});

describe('countTokens', () => {
  it('estimates about 1.3 tokens per English word and 0 for empty text', () => {
    expect(countTokens('')).toBe(0);
    const text = 'The contractor shall provide guardrails at every open edge of the structure.';
    expect(countTokens(text)).toBeGreaterThanOrEqual(12);
    expect(countTokens(text)).toBeLessThanOrEqual(18);
  });

  it('counts long numbers in groups of three digits', () => {
    expect(countTokens('123456789')).toBe(3);
  });
});

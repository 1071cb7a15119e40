import { judgeRequirement } from './judge';
import { passageOf } from './fixtures';
import { compareQuantities, extractQuantities } from './quantities';

describe('quantities', () => {
  it('reads bounds, ranges, word numbers and units', () => {
    const q = (t: string) => extractQuantities(t).map(({ dim, lo, hi }) => ({ dim, lo, hi }));
    expect(q('at least 42 inches')).toEqual([{ dim: 'length', lo: 42, hi: Infinity }]);
    expect(q('no later than thirty (30) days')).toEqual([{ dim: 'time', lo: 0, hi: 720 }]);
    expect(q('between 3 and 4 feet')).toEqual([{ dim: 'length', lo: 36, hi: 48 }]);
    expect(q('two copies')).toEqual([{ dim: 'noun:copi', lo: 2, hi: 2 }]);
    expect(q('See Section 4.2 and ISO 9001 of 2019')).toEqual([]);
  });

  it('converts units before comparing (3.5 feet = 42 inches)', () => {
    const req = extractQuantities('at least 42 inches');
    expect(compareQuantities(req, extractQuantities('3.5 feet')).conflict).toBeNull();
    expect(compareQuantities(req, extractQuantities('3 feet')).conflict).not.toBeNull();
    expect(compareQuantities(extractQuantities('at most 10 workers'), extractQuantities('no more than 8 workers')).satisfied).toBe(1);
  });

  it('reads a negated comparison as the opposite bound ("must not exceed 6 months" = at most 6 months)', () => {
    const q = (t: string) => extractQuantities(t).map(({ lo, hi }) => ({ lo, hi }));
    expect(q('The probation period must not exceed 6 months.')).toEqual([{ lo: 0, hi: 6 * 730.5 }]);
    expect(q('rails shall not be less than 42 inches')).toEqual([{ lo: 42, hi: Infinity }]);
    expect(compareQuantities(extractQuantities('must not exceed 6 months'), extractQuantities('a probation period of 6 months')).conflict).toBeNull();
    expect(compareQuantities(extractQuantities('must not exceed 6 months'), extractQuantities('a probation period of 9 months')).conflict).not.toBeNull();
  });

  it('bounds that differ only at their end point are no conflict ("under 75 dB" vs "must not exceed 75 dB")', () => {
    const check = compareQuantities(extractQuantities('under 75 dB'), extractQuantities('must not exceed 75 dB'));
    expect(check.conflict).toBeNull();
    expect(compareQuantities(extractQuantities('under 75 dB'), extractQuantities('must not exceed 80 dB')).conflict).not.toBeNull();
  });
});

describe('judge on compliance wording', () => {
  const nda = passageOf([
    [
      1,
      'The Recipient shall not disclose Confidential Information to any person, except to its employees who need to know it. Doors to the archive shall be kept closed.',
    ],
  ]);

  it('reads an exception as a permission', () => {
    expect(judgeRequirement('The Recipient may disclose Confidential Information to its employees.', [nda]).verdict).toBe('COMPLIANT');
  });

  it('treats antonyms as a contradiction', () => {
    const j = judgeRequirement('Doors to the archive shall be kept open.', [nda]);
    expect(j.verdict).toBe('CONTRADICTS');
    expect(j.explanation).toContain('"open"');
  });
});

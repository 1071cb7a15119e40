import { composeExtractiveAnswer, NO_RELEVANT_INFORMATION } from './answer';
import { passageOf } from './fixtures';

const safety = passageOf([
  [3, 'Section 5 Fall protection. Guardrails shall be 42 inches high, plus or minus 3 inches. Toe boards are needed on scaffolds.'],
  [4, 'Hard hats are required at all times on site. Smoking is prohibited on site. Visitors must sign in at the gate.'],
]);
const noise = passageOf([[7, 'The canteen opens at 7 am. Parking is available behind the office.']], {
  chunkId: 'chunk-2',
  documentId: 'doc-2',
  fileName: 'facilities.docx',
  score: 0.4,
});

describe('composeExtractiveAnswer', () => {
  it('quotes exact sentences with [n] markers that match the citations one to one', () => {
    const a = composeExtractiveAnswer('How high must guardrails be, and are hard hats required?', [noise, safety]);
    expect(a.citations.length).toBeGreaterThanOrEqual(2);
    expect(a.answer.startsWith('Based on the documents (verbatim excerpts):')).toBe(true);
    const markers = [...a.answer.matchAll(/\[(\d+)\]/g)].map((m) => Number(m[1]));
    expect(markers).toEqual(a.citations.map((c) => c.index));
    expect(a.citations.map((c) => c.index)).toEqual(a.citations.map((_, i) => i + 1));
    for (const c of a.citations) {
      expect(c.quote.passage.text.slice(c.quote.start, c.quote.end)).toBe(c.quote.quote);
      expect(a.answer).toContain(`"${c.quote.quote}" [${c.index}]`);
      expect(c.score).toBeGreaterThan(0);
      expect(c.score).toBeLessThanOrEqual(1);
    }
    expect(a.citations.some((c) => c.quote.quote.includes('Guardrails shall be 42 inches high'))).toBe(true);
  });

  it('gives a quote the page it is on, from pageSpans', () => {
    const a = composeExtractiveAnswer('Is smoking allowed on site?', [safety]);
    expect(a.citations[0].quote.quote).toBe('Smoking is prohibited on site.');
    expect(a.citations[0].quote).toMatchObject({ startPage: 4, endPage: 4 });
    expect(safety).toMatchObject({ startPage: 3, endPage: 4 });
  });

  it('respects maxSentences', () => {
    const a = composeExtractiveAnswer('guardrails hard hats smoking visitors', [safety], { maxSentences: 1 });
    expect(a.citations).toHaveLength(1);
  });

  it('says plainly that nothing relevant was found, with no citations', () => {
    const a = composeExtractiveAnswer('What is the fire extinguisher inspection interval?', [safety, noise]);
    expect(a.answer).toBe(NO_RELEVANT_INFORMATION);
    expect(a.citations).toEqual([]);
    expect(composeExtractiveAnswer('anything', []).citations).toEqual([]);
  });

  it('reports token usage of the question, passages and answer', () => {
    const a = composeExtractiveAnswer('Are hard hats required?', [safety]);
    expect(a.usage.promptTokens).toBeGreaterThan(40);
    expect(a.usage.completionTokens).toBeGreaterThan(5);
    expect(a.usage.totalTokens).toBe(a.usage.promptTokens + a.usage.completionTokens);
  });
});

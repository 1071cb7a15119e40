import { foundNothing, historyFor, MAX_CHAT_MESSAGES, pagesLabel, segmentsOf, type ChatCitation, type Turn } from './conversation';

const turn = (id: number, over: Partial<Turn> = {}): Turn => ({
  id,
  question: `q${id}`,
  answer: `a${id}`,
  citations: [],
  confidence: 0.9,
  agent: 'project',
  state: 'done',
  ...over,
});
const citation = (index: number): ChatCitation => ({
  index,
  document_id: 'd',
  file_name: 'policy.md',
  chunk_id: `c${index}`,
  start_page: null,
  end_page: null,
  quote: `quote ${index}`,
  score: 0.9,
  section: null,
  location: null,
  boxes: [],
});

describe('conversation', () => {
  it('sends the answered turns as history, then the new question; failed, stopped and streaming turns are left out', () => {
    const turns = [turn(1), turn(2, { state: 'failed', answer: '' }), turn(3, { state: 'stopped' }), turn(4)];
    expect(historyFor(turns, 'next?')).toEqual([
      { role: 'user', content: 'q1' },
      { role: 'assistant', content: 'a1' },
      { role: 'user', content: 'q4' },
      { role: 'assistant', content: 'a4' },
      { role: 'user', content: 'next?' },
    ]);
    expect(historyFor([], 'first?')).toEqual([{ role: 'user', content: 'first?' }]);
  });

  it('keeps the request within 50 messages (the oldest turns go) and each message within 8,000 characters', () => {
    const many = Array.from({ length: 40 }, (_, i) => turn(i));
    const sent = historyFor(many, 'last?');
    expect(sent.length).toBeLessThanOrEqual(MAX_CHAT_MESSAGES);
    expect(sent.length).toBe(49);
    expect(sent[0].content).toBe('q16');
    expect(sent.at(-1)).toEqual({ role: 'user', content: 'last?' });
    expect(historyFor([turn(1, { answer: 'x'.repeat(9000) })], 'q')[1].content).toHaveLength(8000);
  });

  it('cuts an answer at the markers that have a citation', () => {
    const [c1, c2] = [citation(1), citation(2)];
    expect(segmentsOf('Sessions end after 30 minutes [1]. Logs are kept [2][1].', [c1, c2])).toEqual([
      { text: 'Sessions end after 30 minutes ' },
      { marker: 1, citation: c1 },
      { text: '. Logs are kept ' },
      { marker: 2, citation: c2 },
      { marker: 1, citation: c1 },
      { text: '.' },
    ]);
    // Before the citations arrive (or a bracketed number with no citation) the text stays as it is.
    expect(segmentsOf('See [1] and [7].', [])).toEqual([{ text: 'See [1] and [7].' }]);
    expect(segmentsOf('', [c1])).toEqual([]);
  });

  it('tells a finished answer without citations (nothing found) and labels pages', () => {
    expect(foundNothing(turn(1))).toBe(true);
    expect(foundNothing(turn(1, { citations: [citation(1)] }))).toBe(false);
    expect(foundNothing(turn(1, { state: 'streaming' }))).toBe(false);
    expect([pagesLabel({ start_page: null, end_page: null }), pagesLabel({ start_page: 3, end_page: 3 }), pagesLabel({ start_page: 3, end_page: 4 })]).toEqual([
      '',
      'p. 3',
      'pp. 3–4',
    ]);
  });
});

import { BM25_AVG_LEN, BM25_K1, chunkSparseVector, foldAccents, querySparseVector, termIndex } from './lexical-terms';

// The sparse BM25 vectors the Qdrant adapter stores; checked here because no Qdrant runs in CI.
describe('lexical terms for sparse BM25 vectors', () => {
  it('analyzes chunks and queries the same way: case, inflection, accents, headings', () => {
    const chunk = chunkSparseVector({ headingPath: ['Café'], text: 'Extinguishers are inspected; the extinguisher log.' });
    const query = querySparseVector('EXTINGUISHER inspection cafe')!;
    expect(query.values).toEqual([1, 1, 1]);
    for (const i of query.indices) expect(chunk.indices).toContain(i);
    expect(foldAccents('naïve Größe ﬁre')).toBe('naive Grosse fire');
  });

  it('stores BM25 saturated term frequencies with sorted indices', () => {
    const v = chunkSparseVector({ headingPath: [], text: 'fire fire door' });
    expect([...v.indices].sort((a, b) => a - b)).toEqual(v.indices);
    const len = 3;
    const norm = BM25_K1 * (1 - 0.75 + (0.75 * len) / BM25_AVG_LEN);
    const fire = v.values[v.indices.indexOf(termIndex('fire'))];
    const door = v.values[v.indices.indexOf(termIndex('door'))];
    expect(fire).toBeCloseTo((2 * (BM25_K1 + 1)) / (2 + norm), 12);
    expect(door).toBeCloseTo((1 * (BM25_K1 + 1)) / (1 + norm), 12);
    expect(fire).toBeGreaterThan(door);
  });

  it('a query without searchable terms gives null (the store then returns no hits)', () => {
    for (const q of ['', 'the and of', '?!', '*']) expect(querySparseVector(q)).toBeNull();
  });
});

import { sentenceUnits } from './align';
import type { PassageInput } from './types';
import { NLI_SIGNAL_NAMES, rankEvidence, unitKey, verdictSignals } from './verdict-signals';

const passage: PassageInput = {
  chunkId: 'c1',
  documentId: 'd1',
  fileName: 'site-plan.txt',
  text: 'All workers shall wear hard hats. Smoking is permitted in site vehicles. The first-aid kit is checked weekly.',
  startPage: null,
  endPage: null,
  pageSpans: [],
  score: 1,
};

describe('entailment signals (semantic.nli)', () => {
  const requirement = 'Smoking is prohibited in site vehicles.';
  const units = sentenceUnits([passage]);
  // unit vectors: the requirement and the second sentence close in meaning, the others far
  const vec = (i: number) => [i === 1 ? 1 : 0, i === 1 ? 0 : 1];
  const semantic = { query: [1, 0], sentences: new Map(units.map((u, i) => [unitKey(u), vec(i)])) };

  it("are absent without scores, and give the chosen sentence's and the best scores with them", () => {
    expect(verdictSignals(requirement, [passage], semantic).nli).toBeNull();
    const ranked = rankEvidence(requirement, [passage], semantic).ranked;
    expect(ranked[0].unit.text).toBe('Smoking is permitted in site vehicles.');
    const nli = new Map<string, [number, number, number]>([
      [unitKey(ranked[0].unit), [0.1, 0.8, 0.1]],
      [unitKey(ranked[1].unit), [0.3, 0.1, 0.6]],
    ]);
    const s = verdictSignals(requirement, [passage], { ...semantic, nli });
    expect(NLI_SIGNAL_NAMES).toEqual(['nli_entail_best', 'nli_contradict_best', 'nli_entail_max', 'nli_contradict_max']);
    expect(s.nli).toEqual([0.1, 0.8, 0.3, 0.8]);
    expect(s.nliContradiction?.alignment.unit.text).toBe('Smoking is permitted in site vehicles.');
    expect(s.nliContradiction?.probability).toBe(0.8);
  });
});

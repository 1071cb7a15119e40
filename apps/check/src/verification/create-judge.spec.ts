import path from 'node:path';
import { LocalEmbeddingModel } from '@kb/models';
import { VERDICT_MODEL } from '@kb/text';
import { openNliModel } from './create-judge';

const ROOT = path.resolve(__dirname, '../../../..');

describe('openNliModel (the embedded judge\'s entailment cross-encoder)', () => {
  let embeddings: LocalEmbeddingModel;
  beforeAll(async () => {
    embeddings = await LocalEmbeddingModel.load({ modelsDir: path.resolve(ROOT, '../shared/models'), model: 'all-MiniLM-L6-v2' });
  }, 120_000);

  it('is off with JUDGE_NLI_MODEL_DIR=none (by design) and without an embedding model (degraded), saying why', async () => {
    expect(await openNliModel('none', embeddings, true)).toEqual({ model: null, reason: 'JUDGE_NLI_MODEL_DIR=none', degraded: false });
    expect(await openNliModel('', null, true)).toEqual({ model: null, reason: expect.stringMatching(/no embedding model/), degraded: true });
  });

  it('reports a missing folder instead of failing the boot', async () => {
    const opened = await openNliModel('/nonexistent/judge-nli', embeddings, true);
    expect(opened).toEqual({ model: null, reason: expect.stringContaining('/nonexistent/judge-nli'), degraded: true });
  });

  it('loads the committed model for train:judge, and for verdicts only when the judge has its nli variant', async () => {
    const forTraining = await openNliModel('', embeddings, true);
    expect(forTraining.model?.name).toBe('judge-nli-minilm');
    const forVerdicts = await openNliModel('', embeddings);
    if (VERDICT_MODEL.variants.nli) expect(forVerdicts.model?.name).toBe('judge-nli-minilm');
    else expect(forVerdicts).toEqual({ model: null, reason: expect.stringMatching(/no nli variant/), degraded: false });
  });
});

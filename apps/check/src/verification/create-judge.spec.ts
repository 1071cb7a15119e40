import path from 'node:path';
import { LocalEmbeddingModel } from '@kb/models';
import { VERDICT_MODEL } from '@kb/text';
import { openNliModel, openRsmModel } from './create-judge';

const ROOT = path.resolve(__dirname, '../../../..');

describe("openNliModel (the embedded judge's entailment cross-encoder)", () => {
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

describe("openRsmModel (the embedded judge's requirement-satisfaction model)", () => {
  let embeddings: LocalEmbeddingModel;
  beforeAll(async () => {
    embeddings = await LocalEmbeddingModel.load({ modelsDir: path.resolve(ROOT, '../shared/models'), model: 'all-MiniLM-L6-v2' });
  }, 120_000);

  it('is off with JUDGE_RSM_MODEL_DIR=none, degraded without an embedding model or with a missing folder', async () => {
    expect(await openRsmModel('none', embeddings)).toEqual({ model: null, reason: 'JUDGE_RSM_MODEL_DIR=none', degraded: false });
    expect(await openRsmModel('', null, true)).toEqual({ model: null, reason: expect.stringMatching(/no embedding model/), degraded: true });
    expect(await openRsmModel('/nonexistent/judge-rsm', embeddings, true)).toEqual({
      model: null,
      reason: expect.stringContaining('/nonexistent/judge-rsm'),
      degraded: true,
    });
  });

  it('loads the committed model, whose labels are read as satisfies / contradicts / unrelated, trained at its own length', async () => {
    const opened = await openRsmModel('', embeddings);
    expect(VERDICT_MODEL.variants.rsm).toBeDefined();
    expect(opened.model?.name).toBe('judge-rsm-minilm');
    const [s] = await opened.model!.score([
      { premise: 'Access Control: Sessions are logged off after 15 minutes without activity.', hypothesis: 'Sessions end after a period of inactivity.' },
    ]);
    expect(s.entailment + s.contradiction + s.neutral).toBeCloseTo(1, 5);
  }, 120_000);
});

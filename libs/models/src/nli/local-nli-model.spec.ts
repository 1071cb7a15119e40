// The committed entailment cross-encoder (libs/text/models/judge-nli-minilm, `npm run train:nli`), real model.
import { mkdtempSync, rmSync, writeFileSync, mkdirSync, copyFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ModelProviderError } from '../errors';
import { withEventLoopGap } from '../testing/event-loop-gap';
import { LocalNliModel } from './local-nli-model';

const MODEL_DIR = path.resolve(__dirname, '../../../text/models/judge-nli-minilm');

describe('LocalNliModel (libs/text/models/judge-nli-minilm)', () => {
  let model: LocalNliModel;
  beforeAll(async () => {
    model = await LocalNliModel.load({ dir: MODEL_DIR });
  });

  // KNOWN SHORTFALL of the committed model (docs/check.md "Entailment cross-encoder: figures"): trained on
  // SciFact and ContractNLI pairs only, it reads most policy sentences as contradiction (paraphrase:
  // 0.28 / 0.69 / 0.04 with issue 13's fourth-round model, 0.33 / 0.59 / 0.08 with the third).
  // `it.failing` keeps the expected behaviour written down and turns red the day a retrained model gets
  // it right, so that this marker is removed then.
  it.failing('reads a paraphrase as entailment and its negation as contradiction', async () => {
    const premise = 'All workers on site must wear hard hats at all times.';
    const [para, negated] = await model.score([
      { premise, hypothesis: 'Hard hats are required for every worker on the site.' },
      { premise, hypothesis: 'Workers on site do not have to wear hard hats.' },
    ]);
    expect(para.entailment).toBeGreaterThan(para.contradiction);
    expect(para.entailment).toBeGreaterThan(para.neutral);
    expect(negated.contradiction).toBeGreaterThan(negated.entailment);
    expect(negated.contradiction).toBeGreaterThan(negated.neutral);
    for (const s of [para, negated]) expect(s.entailment + s.contradiction + s.neutral).toBeCloseTo(1, 5);
  });

  it.failing('reads an unrelated sentence as neither entailing nor contradicting (known shortfall, see above)', async () => {
    const [unrelated] = await model.score([
      { premise: 'The first-aid kit is kept in the site office and checked weekly.', hypothesis: 'Passwords must be at least 12 characters long.' },
    ]);
    expect(unrelated.neutral).toBeGreaterThan(unrelated.entailment);
    expect(unrelated.neutral).toBeGreaterThan(unrelated.contradiction);
  });

  it('returns the scores in input order whatever the batching', async () => {
    const pairs = [
      { premise: 'Smoking is prohibited everywhere on site.', hypothesis: 'Smoking is allowed on site.' },
      { premise: 'Visitors must sign in at the reception desk before entering the site.', hypothesis: 'Visitors are required to sign in at reception.' },
      { premise: 'x', hypothesis: 'y' },
    ];
    const together = await model.score(pairs);
    for (const [i, p] of pairs.entries()) {
      const [alone] = await model.score([p]);
      expect(alone.entailment).toBeCloseTo(together[i].entailment, 1);
      expect(alone.contradiction).toBeCloseTo(together[i].contradiction, 1);
    }
  });

  it("gives a call the same scores whatever other calls run beside it (the int8 model's scores depend on the batch)", async () => {
    const mine = [
      { premise: 'Visitors must sign in at the reception desk before entering the site.', hypothesis: 'Visitors are required to sign in at reception.' },
      { premise: 'Backups are encrypted and tested every month.', hypothesis: 'Backups must be tested.' },
    ];
    const other = [
      { premise: 'Smoking is prohibited everywhere on site, including the car park and the site offices.', hypothesis: 'Smoking is allowed on site.' },
    ];
    const alone = await model.score(mine);
    const [, beside] = await Promise.all([model.score(other), model.score(mine), model.score(other)]);
    expect(beside).toEqual(alone);
  });

  it('gives the same scores whatever the worker threads and their intra-op threads (JUDGE_MODEL_WORKERS, JUDGE_MODEL_THREADS)', async () => {
    const calls = [
      [
        { premise: 'Visitors must sign in at the reception desk before entering the site.', hypothesis: 'Visitors are required to sign in at reception.' },
        { premise: 'Backups are encrypted and tested every month.', hypothesis: 'Backups must be tested.' },
      ],
      [{ premise: 'Smoking is prohibited everywhere on site, including the car park and the site offices.', hypothesis: 'Smoking is allowed on site.' }],
      [
        {
          premise: 'Information systems automatically log users off after 15 minutes of inactivity.',
          hypothesis: 'Sessions end after a period of inactivity.',
        },
        { premise: 'Scaffolds are inspected by a competent person before each shift.', hypothesis: 'Scaffolds must be inspected.' },
        { premise: 'x', hypothesis: 'y' },
      ],
    ];
    const expected = [];
    for (const c of calls) expected.push(await model.score(c));
    const pool = await LocalNliModel.load({ dir: MODEL_DIR, workers: 2, threads: 2 });
    try {
      // Six calls at once: the two workers run them side by side.
      expect(await Promise.all([...calls, ...calls].map((c) => pool.score(c)))).toEqual([...expected, ...expected]);
      // The second worker served calls too (the load's probe went to the first).
      expect((pool as unknown as { threads: Array<{ nextRequest: number }> }).threads[1].nextRequest).toBeGreaterThan(0);
    } finally {
      for (const t of (pool as unknown as { threads: Array<{ terminate(): Promise<void> }> }).threads) await t.terminate();
    }
  });

  it("keeps the caller's event loop free while it scores (the forward passes run in the model's thread)", async () => {
    // 6 passes of 8 pairs of 128 word pieces: in the caller's thread each would hold its event loop for the whole
    // pass (100-300 ms on 2 cores).
    const long = 'The contractor shall inspect every scaffold before each shift and record the inspection in the site register. '.repeat(8);
    const pairs = Array.from({ length: 48 }, (_, i) => ({ premise: `${i} ${long}`, hypothesis: 'Scaffolds must be inspected before use.' }));
    const { longestGap, elapsed } = await withEventLoopGap(() => model.score(pairs));
    // The timer ran all along: no gap near the length of a pass (elapsed / 6).
    expect(longestGap).toBeLessThan(Math.max(100, elapsed / 12));
  });

  it("serves the next call after the model's thread died (a new thread is started), with the same scores", async () => {
    const pair = {
      premise: 'Visitors must sign in at the reception desk before entering the site.',
      hypothesis: 'Visitors are required to sign in at reception.',
    };
    const [before] = await model.score([pair]);
    // The thread as the runtime would lose it (an out-of-memory kill, a native crash).
    await (model as unknown as { threads: Array<{ terminate(): Promise<void> }> }).threads[0].terminate();
    const [after] = await model.score([pair]);
    expect(after).toEqual(before);
  });

  it('fails the passes of a thread that dies under them with a retryable error', async () => {
    // A long pass (8 pairs of 128 word pieces), so that the thread is stopped while it runs.
    const long = 'Backups are encrypted, copied off site and restored in a test every month by the operations team. '.repeat(8);
    const pending = model.score(Array.from({ length: 8 }, (_, i) => ({ premise: `${i} ${long}`, hypothesis: 'Backups must be tested.' })));
    await (model as unknown as { threads: Array<{ terminate(): Promise<void> }> }).threads[0].terminate();
    await expect(pending).rejects.toMatchObject({ retryable: true });
    const [next] = await model.score([{ premise: 'Backups are encrypted and tested every month.', hypothesis: 'Backups must be tested.' }]);
    expect(next.entailment + next.contradiction + next.neutral).toBeCloseTo(1, 5);
  });

  it('refuses a folder without the model, naming it', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'nli-missing-'));
    try {
      expect(LocalNliModel.present(dir)).toBe(false);
      await expect(LocalNliModel.load({ dir })).rejects.toThrow(ModelProviderError);
      await expect(LocalNliModel.load({ dir })).rejects.toThrow(dir);
      // labels other than entailment / contradiction / neutral are refused too
      mkdirSync(path.join(dir, 'onnx'));
      for (const f of ['tokenizer.json', 'onnx/model_quantized.onnx']) copyFileSync(path.join(MODEL_DIR, f), path.join(dir, f));
      writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ id2label: { 0: 'positive', 1: 'negative' } }));
      await expect(LocalNliModel.load({ dir })).rejects.toThrow(/id2label/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

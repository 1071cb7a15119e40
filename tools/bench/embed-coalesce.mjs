#!/usr/bin/env node
// `node tools/bench/embed-coalesce.mjs [--texts N] [--titles]`: throughput of the local embedding
// model (all-MiniLM-L6-v2 from ../shared/models, or KB_MODELS_DIR / EMBEDDINGS_MODEL) with 16
// concurrent callers of one text each (as enrichment embeds many small documents at once), with
// `coalesce: true` (forward passes filled across callers) against `coalesce: false` (the default:
// one call's texts per pass). Both models are loaded in this process and measured in alternating
// rounds of N SciFact abstracts (`--titles`: their titles only), so machine load hits both alike.
// Prints texts/s per round and the ratio of the means. Needs a build (`node tools/build.mjs`).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ROOT } from '../lib/bootstrap.mjs';

const require = createRequire(import.meta.url);
const { LocalEmbeddingModel } = require(path.join(ROOT, 'dist/libs/models/src/embeddings/local-embedding-model.js'));
const { values } = parseArgs({
  options: { texts: { type: 'string', default: '96' }, titles: { type: 'boolean', default: false }, rounds: { type: 'string', default: '4' } },
});
const perRound = Number(values.texts);
const shared = path.resolve(ROOT, '../shared');
const texts = readFileSync(path.join(shared, 'datasets/scifact/corpus.jsonl'), 'utf8')
  .split('\n')
  .filter((l) => l.trim())
  .map((l) => JSON.parse(l))
  .map((d) => (values.titles ? d.title : `${d.title} ${Array.isArray(d.abstract) ? d.abstract.join(' ') : d.abstract}`));
const options = { modelsDir: process.env.KB_MODELS_DIR ?? path.join(shared, 'models'), model: process.env.EMBEDDINGS_MODEL ?? 'all-MiniLM-L6-v2' };
const models = {
  coalesce: await LocalEmbeddingModel.load({ ...options, coalesce: true }),
  default: await LocalEmbeddingModel.load({ ...options, coalesce: false }),
};
const rates = { coalesce: [], default: [] };
let offset = 0;
for (let round = 0; round < Number(values.rounds); round++) {
  for (const [name, model] of Object.entries(models)) {
    const items = texts.slice(offset, offset + perRound);
    offset += perRound;
    let next = 0;
    const passes = model.stats.passes;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < items.length) await model.embed([items[next++]]);
      }),
    );
    const rate = items.length / ((performance.now() - t0) / 1000);
    rates[name].push(rate);
    process.stderr.write(
      `round ${round} ${name}: ${rate.toFixed(1)} texts/s, ${(items.length / (model.stats.passes - passes)).toFixed(1)} texts per pass, load ${os.loadavg()[0].toFixed(1)}\n`,
    );
  }
}
const mean = (a) => a.reduce((x, y) => x + y, 0) / a.length;
process.stdout.write(
  `${JSON.stringify({ texts: values.titles ? 'titles' : 'abstracts', perRound, coalesceTextsPerSecond: +mean(rates.coalesce).toFixed(1), defaultTextsPerSecond: +mean(rates.default).toFixed(1), ratio: +(mean(rates.coalesce) / mean(rates.default)).toFixed(2), loadAverage: os.loadavg().map((x) => +x.toFixed(1)) })}\n`,
);

// Study (issue 27 item 6): do the judge's cross-encoders tell SQuAD 2.0's unanswerable questions from answerable ones?
// For every third question of the SQuAD tune articles (the first half of ../shared/datasets/squad2/dev-half-a.json,
// never the report half), the sentence of its own paragraph closest in meaning to the question (all-MiniLM-L6-v2)
// is read by the requirement-satisfaction model (libs/text/models/judge-rsm-minilm) and the entailment model
// (libs/text/models/judge-nli-minilm) as premise, the question as hypothesis; prints the AUC of each score for
// "answerable" against "unanswerable" (0.5 = no separation). Results: docs/agent.md "Measuring".
// Usage: node tools/build.mjs && node libs/text/models/answerability/train/cross-encoder-study.mjs [--dataset FILE]
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { splitArticles } from '../../../../../tools/eval/squad2.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../../..');
const require = createRequire(import.meta.url);
const text = require(path.join(ROOT, 'dist/libs/text/src/index.js'));
const { LocalEmbeddingModel, LocalNliModel } = require(path.join(ROOT, 'dist/libs/models/src/index.js'));
const { values } = parseArgs({ options: { dataset: { type: 'string', default: path.resolve(ROOT, '../shared/datasets/squad2/dev-half-a.json') } } });

const embeddings = await LocalEmbeddingModel.load({ modelsDir: path.resolve(ROOT, '../shared/models'), model: 'all-MiniLM-L6-v2' });
const models = {
  rsm: await LocalNliModel.load({ dir: path.join(ROOT, 'libs/text/models/judge-rsm-minilm') }),
  nli: await LocalNliModel.load({ dir: path.join(ROOT, 'libs/text/models/judge-nli-minilm') }),
};
// The raw articles (loadSquad would drop which paragraph a question belongs to), split as everywhere else.
const tune = splitArticles(JSON.parse(readFileSync(values.dataset, 'utf8')).data, 'tune');
const dot = (a, b) => a.reduce((s, x, i) => s + x * b[i], 0);
const rows = [];
let n = 0;
for (const article of tune) {
  for (const p of article.paragraphs) {
    const sentences = text.splitSentences(p.context).map((s) => p.context.slice(s.start, s.end));
    const vectors = await embeddings.embed(sentences);
    for (const q of p.qas) {
      if (n++ % 3) continue;
      const [qv] = await embeddings.embed([q.question]);
      const sims = vectors.map((v) => dot(v, qv));
      const sentence = sentences[sims.indexOf(Math.max(...sims))];
      const row = { unanswerable: !!q.is_impossible, similarity: Math.max(...sims) };
      for (const [name, model] of Object.entries(models)) [row[name]] = await model.score([{ premise: sentence, hypothesis: q.question }]);
      rows.push(row);
    }
  }
}
/** Area under the ROC curve of `score` for answerable (positive) against unanswerable questions. */
function auc(score) {
  const pos = rows.filter((r) => !r.unanswerable).map(score);
  const neg = rows.filter((r) => r.unanswerable).map(score);
  let s = 0;
  for (const x of pos) for (const y of neg) s += x > y ? 1 : x === y ? 0.5 : 0;
  return Number((s / pos.length / neg.length).toFixed(3));
}
console.log(
  JSON.stringify(
    {
      questions: rows.length,
      unanswerable: rows.filter((r) => r.unanswerable).length,
      auc: {
        similarity: auc((r) => r.similarity),
        rsm_satisfies: auc((r) => r.rsm.entailment),
        rsm_not_unrelated: auc((r) => 1 - r.rsm.neutral),
        nli_entailment: auc((r) => r.nli.entailment),
        nli_not_contradiction: auc((r) => -r.nli.contradiction),
        nli_not_neutral: auc((r) => 1 - r.nli.neutral),
      },
    },
    null,
    2,
  ),
);

// Writes the training vectors of the answerability model (see train.py): for every SQuAD 2.0
// question, the signals of every whole sentence of its top retrieved passages, computed by the
// service's own code (@kb/text sentenceSignals, built into dist/) with the real embedding model.
//
// Retrieval is reproduced in process the way the retrieval service ranks: each paragraph of the
// article is a passage; BM25 (k1 1.2, b 0.75) over @kb/text's analyzed terms and cosine similarity
// of the embedding model are fused by reciprocal rank fusion (k = 60); the top 8 are the passages.
// Usage: node dump-features.mjs --dataset FILE --out FILE.jsonl  (called by run.mjs)
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { loadSquad, normalizeForMatch, splitArticles } from '../../eval/squad2.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const require = createRequire(import.meta.url);
const text = require(path.join(ROOT, 'dist/libs/text/src/index.js'));
const { LocalEmbeddingModel } = require(path.join(ROOT, 'dist/libs/models/src/index.js'));

const { values } = parseArgs({ options: { dataset: { type: 'string' }, out: { type: 'string' }, models: { type: 'string' }, 'top-k': { type: 'string', default: '8' } } });
const TOP_K = Number(values['top-k']);
const model = await LocalEmbeddingModel.load({ modelsDir: values.models ?? path.resolve(ROOT, '../shared/models'), model: 'all-MiniLM-L6-v2' });
const articles = loadSquad(values.dataset);
const tuneTitles = new Set(splitArticles(articles, 'tune').map((a) => a.title));

/** Embeds with a cache by text (sentences repeat across the questions of one article). */
const cache = new Map();
async function embed(texts) {
  const missing = [...new Set(texts.filter((t) => !cache.has(t)))];
  for (let i = 0; i < missing.length; i += 64) {
    const batch = missing.slice(i, i + 64);
    const vectors = await model.embed(batch);
    batch.forEach((t, j) => cache.set(t, vectors[j]));
  }
  return texts.map((t) => cache.get(t));
}
const dot = (a, b) => a.reduce((s, x, i) => s + x * b[i], 0);

function bm25(queryTerms, docs) {
  const N = docs.length;
  const avg = docs.reduce((s, d) => s + d.length, 0) / N;
  const df = new Map();
  for (const d of docs) for (const t of new Set(d)) df.set(t, (df.get(t) ?? 0) + 1);
  return docs.map((d) => {
    const tf = new Map();
    for (const t of d) tf.set(t, (tf.get(t) ?? 0) + 1);
    let s = 0;
    for (const t of new Set(queryTerms)) {
      const f = tf.get(t) ?? 0;
      if (!f) continue;
      const idf = Math.log(1 + (N - df.get(t) + 0.5) / (df.get(t) + 0.5));
      s += (idf * f * 2.2) / (f + 1.2 * (1 - 0.75 + (0.75 * d.length) / avg));
    }
    return s;
  });
}

const lines = [];
let n = 0;
for (const art of articles) {
  const passages = art.paragraphs.map((p, i) => ({ chunkId: `${art.title}:${i}`, documentId: art.title, fileName: `${art.title}.txt`, text: p, startPage: null, endPage: null, pageSpans: [], score: 0 }));
  const terms = art.paragraphs.map((p) => text.analyze(p));
  const pVec = await embed(art.paragraphs);
  for (const q of art.questions) {
    const [qVec] = await embed([q.question]);
    const lex = bm25(text.analyze(q.question), terms);
    const dense = pVec.map((v) => dot(v, qVec));
    const rankOf = (scores) => {
      const order = scores.map((s, i) => [s, i]).sort((a, b) => b[0] - a[0]);
      const r = new Array(scores.length);
      order.forEach(([, i], k) => (r[i] = k));
      return r;
    };
    const lr = rankOf(lex);
    const dr = rankOf(dense);
    const fused = passages.map((p, i) => ({ ...p, score: (lex[i] > 0 ? 1 / (60 + lr[i] + 1) : 0) + 1 / (60 + dr[i] + 1) }));
    const top = fused.sort((a, b) => b.score - a.score).slice(0, TOP_K);
    const alignments = text.alignSentences(q.question, top, text.sentenceUnits(top, { whole: true }));
    if (alignments.length === 0) continue;
    const vecs = await embed(alignments.map((a) => a.unit.text));
    const sem = vecs.map((v) => dot(v, qVec));
    const semantic = text.sentenceSignals(q.question, alignments, sem);
    const lexical = text.sentenceSignals(q.question, alignments, null);
    const gold = q.answers.map(normalizeForMatch);
    lines.push(
      JSON.stringify({
        id: q.id,
        article: art.title,
        split: tuneTitles.has(art.title) ? 'tune' : 'report',
        answerable: q.answerable,
        y: alignments.map((a) => (q.answerable && gold.some((g) => normalizeForMatch(a.unit.text).includes(g)) ? 1 : 0)),
        context: text.questionContextSignals(q.question, top),
        semantic: semantic.map((s) => s.features),
        lexical: lexical.map((s) => s.features),
      }),
    );
    if (++n % 500 === 0) process.stderr.write(`  ${n} questions\n`);
  }
}
writeFileSync(values.out, lines.join('\n') + '\n');
process.stderr.write(`wrote ${lines.length} questions to ${values.out}\n`);

// Writes the training vectors of the answerability model (see train_answerability.py): for every SQuAD 2.0
// question, the signals of every whole sentence of its top retrieved passages, computed by the
// service's own code (@kb/text sentenceSignals, built into dist/) with the real embedding model.
//
// Retrieval is reproduced in process the way the retrieval service ranks: each paragraph of the
// article is a passage; BM25 (k1 1.2, b 0.75) over @kb/text's analyzed terms and cosine similarity
// of the embedding model are fused by reciprocal rank fusion (k = 60); the top 8 are the passages.
// The product question set (product-set.mjs: questions over ../shared/corpus documents, split
// tune/report) is added with `--product FILE`: its passages are the chunks of all its documents
// (extracted and chunked by the ingestion's code), ranked the same way; rows carry `source: "product"`
// and `article` = `product:<file>` (`product:none` for the unanswerable ones), the leave-one-out group.
// Usage: node dump-features.mjs --dataset FILE [--product FILE] --out FILE.jsonl  (called by train-answerability.mjs)
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { loadSquad, normalizeForMatch, splitArticles } from '../../../../../tools/eval/squad2.mjs';
import { loadProductSet } from './product-set.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../../..');
const require = createRequire(import.meta.url);
const text = require(path.join(ROOT, 'dist/libs/text/src/index.js'));
const { LocalEmbeddingModel } = require(path.join(ROOT, 'dist/libs/models/src/index.js'));

const { values } = parseArgs({ options: { dataset: { type: 'string' }, product: { type: 'string' }, out: { type: 'string' }, models: { type: 'string' }, 'top-k': { type: 'string', default: '8' } } });
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

/**
 * The row of one question: top `TOP_K` of `passages` by BM25 and embedding similarity fused by RRF,
 * the signals of every whole sentence of them (semantic and lexical), `y` per sentence (holds a gold
 * answer), and the question-level context signals. Null when the passages have no sentence.
 */
async function rowFor(question, gold, passages, terms, pVec, meta) {
  const [qVec] = await embed([question]);
  const lex = bm25(text.analyze(question), terms);
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
  const alignments = text.alignSentences(question, top, text.answerUnits(top));
  if (alignments.length === 0) return null;
  const vecs = await embed(alignments.map((a) => a.unit.text));
  const sem = vecs.map((v) => dot(v, qVec));
  const semantic = text.sentenceSignals(question, alignments, sem);
  const lexical = text.sentenceSignals(question, alignments, null);
  const golds = gold.map(normalizeForMatch);
  return {
    ...meta,
    answerable: golds.length > 0,
    y: alignments.map((a) => (golds.some((g) => normalizeForMatch(a.unit.text).includes(g)) ? 1 : 0)),
    context: text.questionContextSignals(question, top),
    semantic: semantic.map((s) => s.features),
    lexical: lexical.map((s) => s.features),
  };
}

const lines = [];
let n = 0;
for (const art of articles) {
  const passages = art.paragraphs.map((p, i) => ({ chunkId: `${art.title}:${i}`, documentId: art.title, fileName: `${art.title}.txt`, text: p, startPage: null, endPage: null, pageSpans: [], score: 0 }));
  const terms = art.paragraphs.map((p) => text.analyze(p));
  const pVec = await embed(art.paragraphs);
  for (const q of art.questions) {
    const row = await rowFor(q.question, q.answerable ? q.answers : [], passages, terms, pVec, { id: q.id, article: art.title, split: tuneTitles.has(art.title) ? 'tune' : 'report', source: 'squad' });
    if (row) lines.push(JSON.stringify(row));
    if (++n % 500 === 0) process.stderr.write(`  ${n} questions\n`);
  }
}
if (values.product) {
  const { set, passages } = await loadProductSet(values.product);
  const terms = passages.map((p) => text.analyze(p.text));
  const pVec = await embed(passages.map((p) => p.text));
  for (const [i, q] of set.questions.entries()) {
    if (!q.split) throw new Error(`${values.product}: question without split (run product-set.mjs)`);
    const row = await rowFor(q.question, q.gold === null ? [] : [q.gold], passages, terms, pVec, { id: `product-${i}`, article: `product:${q.file ?? 'none'}`, split: q.split, source: 'product' });
    if (row) lines.push(JSON.stringify(row));
  }
}
writeFileSync(values.out, lines.join('\n') + '\n');
process.stderr.write(`wrote ${lines.length} questions to ${values.out}\n`);

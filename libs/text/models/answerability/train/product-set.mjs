// The product's own answerability question set (libs/text/models/answerability/train/product-questions.json):
// questions a construction team asks over documents of ../shared/corpus (heat-illness guidance,
// the OSH Act, access and risk policies), answerable (with `gold`, a verbatim phrase of the
// sentence that answers) or not (`gold: null`, with `absent`: words the answer would need that
// occur in none of the documents). The questions are written by hand; this script labels and checks
// them, so the set cannot silently drift from the documents:
//   - each document is extracted and chunked by the ingestion's own code (dist/), as the service does;
//   - every `gold` must occur (case and whitespace ignored) in a chunk of its `file`, and every
//     `absent` word in no chunk of any document — else the script fails and names the question;
//   - `split` (tune | report) is assigned deterministically: within the answerable and within the
//     unanswerable questions, ordered by SHA-256 of the question text, alternately tune and report.
//     Only the tune half may be used for training or tuning (train_answerability.py); report is for figures.
// `node product-set.mjs` (or `--write`) checks, then rewrites the file with the splits.
// `loadProductSet()` is used by dump-features.mjs (the passages the questions are asked over).
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { normalizeForMatch } from '../../../../../tools/eval/squad2.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../../../../..');
export const PRODUCT_SET = path.join(HERE, 'product-questions.json');
const CORPUS = path.resolve(ROOT, '../shared/corpus');
const TYPES = { '.md': 'text/markdown', '.html': 'text/html', '.txt': 'text/plain', '.pdf': 'application/pdf' };

/**
 * Extracts and chunks the set's documents with the ingestion code in dist/ (build first).
 * @returns {Promise<{ set: object, passages: import('../../../src/types').PassageInput[] }>}
 *   the parsed set and every chunk of every document as a passage (`documentId` = the corpus path,
 *   `score` 0; the caller ranks them).
 */
export async function loadProductSet(file = PRODUCT_SET) {
  const require = createRequire(import.meta.url);
  const { extractDocument } = require(path.join(ROOT, 'dist/apps/ingestion/src/extraction/index.js'));
  const { chunkDocument } = require(path.join(ROOT, 'dist/apps/ingestion/src/chunking/index.js'));
  const set = JSON.parse(readFileSync(file, 'utf8'));
  const passages = [];
  for (const rel of set.documents) {
    const doc = await extractDocument(path.join(CORPUS, rel), TYPES[path.extname(rel)]);
    for (const c of chunkDocument(doc)) {
      passages.push({ chunkId: `${rel}#${c.index}`, documentId: rel, fileName: path.basename(rel), text: c.text, startPage: c.startPage, endPage: c.endPage, pageSpans: c.pageSpans, score: 0 });
    }
  }
  return { set, passages };
}

/** Checks gold and absent words against the chunks; returns the problems (empty when the set is sound). */
export function checkProductSet(set, passages) {
  const problems = [];
  const all = passages.map((p) => normalizeForMatch(p.text));
  const seen = new Set();
  for (const q of set.questions) {
    if (seen.has(q.question)) problems.push(`duplicate question: ${q.question}`);
    seen.add(q.question);
    if (q.gold !== null) {
      if (!set.documents.includes(q.file)) problems.push(`${q.question}: file ${q.file} is not in documents`);
      const own = passages.filter((p) => p.documentId === q.file).map((p) => normalizeForMatch(p.text));
      if (!own.some((t) => t.includes(normalizeForMatch(q.gold)))) problems.push(`${q.question}: gold "${q.gold}" is in no chunk of ${q.file}`);
    } else {
      if (!Array.isArray(q.absent) || q.absent.length === 0) problems.push(`${q.question}: an unanswerable question needs absent words`);
      for (const w of q.absent ?? []) if (all.some((t) => t.includes(normalizeForMatch(w)))) problems.push(`${q.question}: absent word "${w}" occurs in the documents`);
    }
  }
  return problems;
}

/** Assigns `split` (see the header): alternately tune/report by SHA-256 order within answerable and unanswerable questions. */
export function assignSplits(questions) {
  const hash = (s) => createHash('sha256').update(s).digest('hex');
  const split = new Map();
  for (const answerable of [true, false]) {
    const group = questions.filter((q) => (q.gold !== null) === answerable).sort((a, b) => hash(a.question).localeCompare(hash(b.question)));
    group.forEach((q, i) => split.set(q.question, i % 2 === 0 ? 'tune' : 'report'));
  }
  return questions.map((q) => ({ ...q, split: split.get(q.question) }));
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { set, passages } = await loadProductSet();
  const problems = checkProductSet(set, passages);
  if (problems.length) {
    process.stderr.write(`${problems.join('\n')}\n`);
    process.exit(1);
  }
  const questions = assignSplits(set.questions);
  const line = (q) => `    ${JSON.stringify(Object.fromEntries(['split', 'file', 'question', 'gold', 'absent'].filter((k) => k in q).map((k) => [k, q[k]])))}`;
  const out = `{\n  "description": ${JSON.stringify(set.description)},\n  "documents": ${JSON.stringify(set.documents, null, 2).replace(/\n/g, '\n  ')},\n  "questions": [\n${questions.map(line).join(',\n')}\n  ]\n}\n`;
  writeFileSync(PRODUCT_SET, out);
  const count = (s, a) => questions.filter((q) => q.split === s && (q.gold !== null) === a).length;
  process.stderr.write(`${passages.length} chunks of ${set.documents.length} documents; ${questions.length} questions checked: tune ${count('tune', true)} answerable + ${count('tune', false)} unanswerable, report ${count('report', true)} + ${count('report', false)}\n`);
}

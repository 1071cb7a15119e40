// SQuAD 2.0 for the answer evaluation and the answerability training: loading, and the split by
// article shared by `npm run eval:answers` and `npm run train:answerability` (tune on one part,
// report on the rest; decisions recorded in docs/agent.md "Measuring").
import { readFileSync } from 'node:fs';

/**
 * Reads a SQuAD 2.0 JSON file (`data[].title`, `data[].paragraphs[].context`, `paragraphs[].qas[]`).
 * @returns {{ title: string, paragraphs: string[], questions: { id: string, question: string, answers: string[], answerable: boolean }[] }[]}
 *   one entry per article, in file order; `answers` are the distinct gold strings (empty when unanswerable).
 * @throws Error when the file is not SQuAD-shaped.
 */
export function loadSquad(file) {
  const json = JSON.parse(readFileSync(file, 'utf8'));
  if (!isSquad(json)) throw new Error(`${file} is not a SQuAD 2.0 file (expected data[].paragraphs[].qas[])`);
  return json.data.map((a) => ({
    title: a.title,
    paragraphs: a.paragraphs.map((p) => p.context),
    questions: a.paragraphs.flatMap((p) =>
      p.qas.map((q) => ({
        id: q.id,
        question: q.question,
        answers: [...new Set((q.answers ?? []).map((x) => x.text))],
        answerable: !q.is_impossible && (q.answers ?? []).length > 0,
      })),
    ),
  }));
}

/** True when a parsed JSON document has the SQuAD layout. */
export function isSquad(json) {
  return Array.isArray(json?.data) && json.data.every((a) => Array.isArray(a.paragraphs));
}

/**
 * The split by article: the first half of the articles (rounded up) in file order is `tune`
 * (training and tuning of the answerability model), the rest is `report` (figures only).
 * For dev-half-a.json: tune = Normans, Computational_complexity_theory, Huguenot, Steam_engine;
 * report = 1973_oil_crisis, European_Union_law, Packet_switching, Harvard_University.
 * @param {'tune' | 'report' | 'all'} split
 */
export function splitArticles(articles, split) {
  const half = Math.ceil(articles.length / 2);
  if (split === 'tune') return articles.slice(0, half);
  if (split === 'report') return articles.slice(half);
  if (split === 'all') return articles;
  throw new Error(`--split must be tune, report or all (got ${split})`);
}

/** The document text of an article: its paragraphs separated by blank lines. */
export function articleText(article) {
  return article.paragraphs.join('\n\n') + '\n';
}

/** Lowercase with whitespace runs collapsed: how a gold string is looked for in a quote. */
export const normalizeForMatch = (s) => s.replace(/\s+/g, ' ').trim().toLowerCase();

/**
 * Sentence boundaries for chunking: where an overlong paragraph may be cut and which trailing
 * sentences may be repeated as overlap. Deliberately simple and deterministic.
 */

/** A sentence as `[start, end)` offsets into the text it was found in (no surrounding whitespace). */
export interface Span {
  start: number;
  end: number;
}

/** Words that end with a period without ending a sentence (lowercase, without the final period). */
const ABBREVIATIONS = new Set([
  'e.g',
  'i.e',
  'cf',
  'vs',
  'viz',
  'al',
  'etc',
  'approx',
  'incl',
  'mr',
  'mrs',
  'ms',
  'dr',
  'prof',
  'sr',
  'jr',
  'st',
  'no',
  'nos',
  'sec',
  'secs',
  'art',
  'fig',
  'figs',
  'ref',
  'vol',
  'ch',
  'chap',
  'para',
  'pp',
  'p',
  'inc',
  'ltd',
  'co',
  'corp',
  'dept',
  'jan',
  'feb',
  'mar',
  'apr',
  'jun',
  'jul',
  'aug',
  'sep',
  'sept',
  'oct',
  'nov',
  'dec',
  'u.s',
  'u.s.c',
]);

/** Sentence-final punctuation (with closing quotes/brackets) followed by whitespace or the end. */
const END_RE = /[.!?\u2026]+["'\u201d\u2019)\]]*(?=\s|$)/g;

function isBoundary(text: string, punctEnd: number, punctStart: number): boolean {
  const after = text.slice(punctEnd, punctEnd + 64).replace(/^\s+/, '');
  if (after === '') return punctEnd + 64 >= text.length;
  if (!/^["'\u201c\u2018([\p{Lu}\p{N}\u2022\u2013-]/u.test(after)) return false;
  if (text[punctStart] !== '.') return true;
  const word = /([\p{L}\p{N}.]+)$/u.exec(text.slice(Math.max(0, punctStart - 40), punctStart))?.[1] ?? '';
  if (word === '') return true;
  const lower = word.toLowerCase();
  if (ABBREVIATIONS.has(lower)) return false;
  if (/^\p{Lu}$/u.test(word)) return false; // initial: "J. Smith"
  if (/^\p{L}(?:\.\p{L})+$/u.test(word)) return false; // "U.S", "e.g"
  return true;
}

/**
 * Splits text into sentences. A sentence ends at ., !, ? or an ellipsis followed by whitespace
 * and an uppercase letter, digit, quote or bullet (abbreviations and initials excepted), and at
 * every line break. Returned spans are ascending, non-overlapping and trimmed.
 */
export function sentenceSpans(text: string): Span[] {
  const cuts: number[] = [];
  END_RE.lastIndex = 0;
  for (let m = END_RE.exec(text); m; m = END_RE.exec(text)) {
    if (isBoundary(text, m.index + m[0].length, m.index)) cuts.push(m.index + m[0].length);
  }
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) cuts.push(i);
  cuts.push(text.length);
  cuts.sort((a, b) => a - b);
  const spans: Span[] = [];
  let start = 0;
  for (const cut of cuts) {
    let s = start;
    let e = cut;
    while (s < e && /\s/.test(text[s])) s++;
    while (e > s && /\s/.test(text[e - 1])) e--;
    if (e > s) spans.push({ start: s, end: e });
    start = Math.max(start, cut);
  }
  return spans;
}

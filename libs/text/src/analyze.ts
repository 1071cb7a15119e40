// eslint-disable-next-line @typescript-eslint/triple-slash-reference -- vendor.d.ts types the untyped stemmer and stopword modules; a .d.ts cannot be imported
/// <reference path="./vendor.d.ts" />
import stem from 'wink-porter2-stemmer';
import { eng as STOPWORD_ENG } from 'stopword';

/**
 * Words dropped from overlap scoring on top of the `stopword` package's English list (108 words).
 * They are general English function words the package list does not carry: modal and auxiliary
 * verbs, deontic words (allowed, permitted, prohibited, required, …) and negation particles (modality
 * and polarity are judged separately, on the raw text, by the judge), comparison words (at least,
 * within, every: quantities are compared separately), question words, and legal "here-/there-" fillers.
 * None of them says what a passage is about.
 */
const EXTRA_STOPWORDS = [
  'allow',
  'allowed',
  'allows',
  'permit',
  'permits',
  'permitted',
  'prohibit',
  'prohibits',
  'prohibited',
  'forbid',
  'forbids',
  'forbidden',
  'require',
  'requires',
  'required',
  'mandatory',
  'obligated',
  'obliged',
  'least',
  'within',
  'every',
  'each',
  'shall',
  'will',
  'may',
  'can',
  'cannot',
  'could',
  'would',
  'should',
  'must',
  'might',
  'ought',
  'not',
  'no',
  'nor',
  'neither',
  'either',
  'non',
  'is',
  'are',
  'was',
  'were',
  'be',
  'been',
  'being',
  'am',
  'does',
  'doing',
  'done',
  'having',
  'why',
  'when',
  'whom',
  'whose',
  'whether',
  'which',
  'what',
  'who',
  'how',
  'its',
  'itself',
  'themselves',
  'ourselves',
  'yourself',
  'yours',
  'ours',
  'theirs',
  'hers',
  'us',
  'she',
  'upon',
  'unto',
  'per',
  'via',
  'etc',
  'eg',
  'ie',
  'e.g',
  'i.e',
  'hereby',
  'herein',
  'hereof',
  'hereto',
  'hereunder',
  'thereof',
  'therein',
  'thereto',
  'thereunder',
  'please',
  'tell',
  'explain',
  'describe',
];

/** The stop-word set used by {@link analyze}: `stopword`'s English list plus {@link EXTRA_STOPWORDS}. */
export const STOPWORDS: ReadonlySet<string> = new Set([...STOPWORD_ENG, ...EXTRA_STOPWORDS]);

/**
 * Word-like tokens: runs of letters/digits, keeping inner dots and apostrophes ("4.2", "e.g", "party's").
 * Hyphens, slashes and other punctuation separate tokens ("hard-hat" -> "hard", "hat").
 */
const TOKEN_RE = /[\p{L}\p{N}]+(?:['.,][\p{L}\p{N}]+)*/gu;

/** One surface token with its character offsets in the original text. */
export interface RawToken {
  /** Lowercased, NFKC-normalised surface form ("1,000" -> "1000", possessive "'s" removed). */
  norm: string;
  start: number;
  end: number;
}

/**
 * Splits text into lowercase word tokens with offsets into `text` (no stop-word removal, no stemming).
 * Curly apostrophes count as apostrophes; thousands separators inside numbers are removed.
 */
export function tokenize(text: string): RawToken[] {
  const out: RawToken[] = [];
  const src = text.replace(/[\u2018\u2019\u02bc]/g, "'");
  TOKEN_RE.lastIndex = 0;
  for (let m = TOKEN_RE.exec(src); m; m = TOKEN_RE.exec(src)) {
    let w = m[0].normalize('NFKC').toLowerCase();
    if (/^\d{1,3}(,\d{3})+(\.\d+)?$/.test(w)) w = w.replace(/,/g, '');
    else if (w.includes(',')) {
      // "a,b" inside a word-run is a list without spaces: keep the first part only here, the
      // regex will not rescan, so split manually.
      const parts = w.split(',');
      let offset = m.index;
      for (const p of parts) {
        if (p) out.push({ norm: p.replace(/'s$/, ''), start: offset, end: offset + p.length });
        offset += p.length + 1;
      }
      continue;
    }
    w = w.replace(/'s$/, '').replace(/'$/, '');
    out.push({ norm: w, start: m.index, end: m.index + m[0].length });
  }
  return out;
}

const stemCache = new Map<string, string>();

/**
 * Stems one lowercase token with the Porter2 ("Snowball English") algorithm of M. F. Porter
 * (https://snowballstem.org/algorithms/english/stemmer.html), via the `wink-porter2-stemmer` package.
 * Numbers and tokens with dots ("4.2", "e.g") are returned unchanged.
 */
export function stemToken(token: string): string {
  if (!/^\p{L}+(?:'\p{L}+)?$/u.test(token)) return token;
  let s = stemCache.get(token);
  if (s === undefined) {
    s = stem(token);
    if (stemCache.size > 50_000) stemCache.clear();
    stemCache.set(token, s);
  }
  return s;
}

/** True when `token` (lowercased surface form) is a stop word or carries no content (one letter). */
export function isStopword(token: string): boolean {
  if (STOPWORDS.has(token)) return true;
  return token.length < 2 && !/\d/.test(token);
}

/**
 * Turns text into the content terms used for overlap scoring.
 *
 * Steps: tokenize (letters/digits, see {@link tokenize}) -> lowercase -> drop stop words (the English
 * list of the `stopword` package plus modal verbs, negations, question words and legal fillers, see
 * {@link STOPWORDS}) and single letters -> Porter2 stem (`wink-porter2-stemmer`). Numbers are kept
 * as terms ("42"), so "42 inches" and "42-inch" share terms.
 *
 * @param text any text; empty or punctuation-only text gives [].
 * @returns terms in text order, duplicates kept (callers build sets or bigrams from them).
 */
export function analyze(text: string): string[] {
  const out: string[] = [];
  for (const t of tokenize(text)) {
    if (isStopword(t.norm)) continue;
    out.push(stemToken(t.norm));
  }
  return out;
}

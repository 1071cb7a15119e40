import { analyze } from './analyze';
import { splitSentences } from './sentences';
import type { PassageInput } from './types';

/** One sentence of one passage, analysed once. */
export interface SentenceUnit {
  passage: PassageInput;
  passageIndex: number;
  /** Offsets into `passage.text`. */
  start: number;
  end: number;
  text: string;
  terms: Set<string>;
  bigrams: Set<string>;
  /**
   * Terms of the sentence before it in the same passage when this one opens with a pronoun or a
   * demonstrative that refers back to it ("The Registry was a spreadsheet. It now uses XML …"): those
   * the sentence lacks count at {@link CONTEXT_CREDIT} towards its coverage. Empty otherwise, and for units
   * not made with `context` (see {@link sentenceUnits}).
   */
  contextTerms: Set<string>;
}

/** How well one sentence matches a query (requirement or question). All parts are in [0, 1]. */
export interface Alignment {
  unit: SentenceUnit;
  /** IDF-weighted share of the query's distinct terms found in the sentence. */
  coverage: number;
  /** IDF-weighted share of the query's terms found in the sentence's passage (context). */
  passageCoverage: number;
  /** Share of the query's adjacent term pairs (bigrams) found in the sentence. */
  bigram: number;
  /** Retrieval score of the passage relative to the best passage. */
  retrieval: number;
  /** Weighted sum, see {@link ALIGN_WEIGHTS}. */
  score: number;
  /** Query terms found in the sentence. */
  matched: string[];
}

/** Weights of the alignment score (sum 1, so the score is in [0, 1]); chosen on the labelled data. */
export const ALIGN_WEIGHTS = { coverage: 0.6, passageCoverage: 0.15, bigram: 0.15, retrieval: 0.1 };

const bigramsOf = (terms: string[]): Set<string> => {
  const out = new Set<string>();
  for (let i = 1; i < terms.length; i++) out.add(`${terms[i - 1]} ${terms[i]}`);
  return out;
};

/**
 * Credit for a query term found only in a sentence's {@link SentenceUnit.contextTerms}: 1, as if the
 * sentence named what it refers back to. Chosen with `npm run train:answerability` among 0, 0.25, 0.5
 * and 1 on the tune halves (out-of-fold gold sentence first, SQuAD 2.0 tune articles, semantic +
 * lexical variants: 0.712 + 0.706, 0.712 + 0.708, 0.715 + 0.715, 0.723 + 0.712; the product set's
 * tune half is the same for all four); report figures in docs/agent.md.
 */
export const CONTEXT_CREDIT = 1;

/**
 * A sentence that refers back to the one before from its first word: a personal pronoun, a
 * possessive or a demonstrative ("It now uses …", "These files …", "Such records …").
 */
const REFERS_BACK = /^[("'\u201c\u2018]?(?:it|its|they|their|them|this|these|that|those|such|he|she|his|her)\b/i;

/** Credit for a query term that appears only inside a compound term ("rail" in "guardrail"). */
export const COMPOUND_CREDIT = 0.6;

/**
 * How much of query term `t` a sentence's term set carries: 1 when present, {@link COMPOUND_CREDIT} when a
 * term of at least 4 letters is the head or tail of a longer compound (at least 3 letters longer) on the
 * other side ("rail" / "guardrail", "hat" is too short), else 0.
 */
export function matchCredit(t: string, terms: Set<string>): number {
  if (terms.has(t)) return 1;
  if (t.length < 4 || /\d/.test(t)) return 0;
  for (const s of terms) {
    if (s.length < 4) continue;
    const [short, long] = s.length < t.length ? [s, t] : [t, s];
    if (long.length - short.length >= 3 && (long.endsWith(short) || long.startsWith(short))) return COMPOUND_CREDIT;
  }
  return 0;
}

/**
 * Splits every passage into analysed sentences (see {@link splitSentences}, {@link analyze}).
 * @param options.whole never cut an over-long sentence (what the answerer quotes).
 * @param options.context give a sentence that opens by referring back ({@link REFERS_BACK}) the terms
 *   of the sentence before it as {@link SentenceUnit.contextTerms} (what the answerer ranks, see {@link answerUnits}).
 */
export function sentenceUnits(passages: PassageInput[], options: { whole?: boolean; context?: boolean } = {}): SentenceUnit[] {
  const out: SentenceUnit[] = [];
  const none = new Set<string>();
  passages.forEach((passage, passageIndex) => {
    let previous: Set<string> | null = null;
    for (const s of splitSentences(passage.text ?? '', options)) {
      const terms = analyze(s.text);
      if (terms.length === 0) continue;
      const termSet = new Set(terms);
      const contextTerms = options.context && previous && REFERS_BACK.test(s.text) ? previous : none;
      out.push({ passage, passageIndex, start: s.start, end: s.end, text: s.text, terms: termSet, bigrams: bigramsOf(terms), contextTerms });
      previous = termSet;
    }
  });
  return out;
}

/**
 * The sentences the extractive answerer ranks and quotes: whole (never cut) and with the context of
 * a sentence that refers back to the one before ({@link sentenceUnits} with `whole` and `context`).
 */
export function answerUnits(passages: PassageInput[]): SentenceUnit[] {
  return sentenceUnits(passages, { whole: true, context: true });
}

/**
 * Inverse document frequency of each query term, with the sentences of the given passages as the
 * documents: the BM25 / Robertson–Spärck Jones form used by Lucene, idf(t) = ln(1 + (N − df + 0.5) / (df + 0.5)),
 * always positive. A query term found in no sentence is weighted like a term found once (df = 1): among a
 * handful of retrieved passages, absence does not make a term rarer than a term seen once.
 */
export function idfWeights(queryTerms: string[], units: SentenceUnit[]): Map<string, number> {
  const n = units.length;
  const idf = new Map<string, number>();
  for (const t of queryTerms) {
    let df = 0;
    for (const u of units) if (u.terms.has(t)) df++;
    df = Math.max(df, 1);
    idf.set(t, Math.log(1 + (n - df + 0.5) / (df + 0.5)));
  }
  return idf;
}

/**
 * Scores every sentence against the query: IDF-weighted term coverage of the sentence and of its passage,
 * bigram (adjacent-term pair) overlap, and the passage's retrieval score relative to the best one.
 *
 * @returns alignments sorted best first; [] when the query has no content terms or there are no sentences.
 */
export function alignSentences(query: string, passages: PassageInput[], units = sentenceUnits(passages)): Alignment[] {
  const qTermsAll = analyze(query);
  const qTerms = [...new Set(qTermsAll)];
  if (qTerms.length === 0 || units.length === 0) return [];
  const qBigrams = [...bigramsOf(qTermsAll)];
  const idf = idfWeights(qTerms, units);
  const total = qTerms.reduce((s, t) => s + (idf.get(t) ?? 0), 0) || 1;
  const scores = passages.map((p) => (Number.isFinite(p.score) ? p.score : 0));
  const maxScore = Math.max(...scores);
  const minScore = Math.min(...scores);
  const relScore = (i: number): number => {
    if (maxScore === minScore) return 1;
    if (minScore >= 0) return scores[i] / maxScore;
    return (scores[i] - minScore) / (maxScore - minScore);
  };
  const passageTerms = new Map<number, Set<string>>();
  for (const u of units) {
    let set = passageTerms.get(u.passageIndex);
    if (!set) passageTerms.set(u.passageIndex, (set = new Set()));
    for (const t of u.terms) set.add(t);
  }
  const out: Alignment[] = [];
  for (const unit of units) {
    const matched: string[] = [];
    let mass = 0;
    for (const t of qTerms) {
      const credit = matchCredit(t, unit.terms);
      if (credit > 0) {
        mass += credit * (idf.get(t) ?? 0);
        if (credit === 1) matched.push(t);
      } else if (unit.contextTerms.has(t)) mass += CONTEXT_CREDIT * (idf.get(t) ?? 0);
    }
    const coverage = mass / total;
    const pTerms = passageTerms.get(unit.passageIndex) ?? new Set<string>();
    const passageCoverage = qTerms.filter((t) => pTerms.has(t)).reduce((s, t) => s + (idf.get(t) ?? 0), 0) / total;
    const bigram = qBigrams.length ? qBigrams.filter((b) => unit.bigrams.has(b)).length / qBigrams.length : coverage;
    const retrieval = relScore(unit.passageIndex);
    const w = ALIGN_WEIGHTS;
    const score = w.coverage * coverage + w.passageCoverage * passageCoverage + w.bigram * bigram + w.retrieval * retrieval;
    out.push({ unit, coverage, passageCoverage, bigram, retrieval, score, matched });
  }
  out.sort((a, b) => b.score - a.score || a.unit.passageIndex - b.unit.passageIndex || a.unit.start - b.unit.start);
  return out;
}

/** Term-set Jaccard similarity of two sentences (used to skip near-duplicate quotes). */
export function jaccard(a: Set<string>, b: Set<string>): number {
  let inter = 0;
  for (const t of a) if (b.has(t)) inter++;
  const union = a.size + b.size - inter;
  return union ? inter / union : 0;
}

/** `text` with every whitespace run collapsed to one space, and for each output character its offset in `text`. */
function collapseWithOffsets(text: string): { norm: string; offsets: number[] } {
  let norm = '';
  const offsets: number[] = [];
  let inSpace = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (/\s/.test(c)) {
      if (!inSpace && norm.length > 0) {
        norm += ' ';
        offsets.push(i);
      }
      inSpace = true;
    } else {
      norm += c;
      offsets.push(i);
      inSpace = false;
    }
  }
  return { norm, offsets };
}

/**
 * Finds `quote` verbatim in `text`, whitespace normalised (runs of spaces, tabs and line breaks match
 * any other run), with typographic quotes and dashes left as they are.
 *
 * @returns offsets [start, end) into `text` such that `text.slice(start, end)` equals the quote up to
 *   whitespace, or null when it is not a substring.
 */
export function findVerbatim(text: string, quote: string): { start: number; end: number } | null {
  const q = quote.replace(/\s+/g, ' ').trim();
  if (!q) return null;
  const { norm, offsets } = collapseWithOffsets(text);
  const at = norm.indexOf(q);
  if (at < 0) return null;
  return { start: offsets[at], end: offsets[at + q.length - 1] + 1 };
}

/** How a model's quote was turned into verbatim evidence. */
export type EvidenceResolution = 'verbatim' | 'repaired' | 'unsupported';

/**
 * Makes a model's quoted evidence verbatim (decisions.md: `evidence` is a verbatim substring of one cited
 * chunk, whitespace normalised).
 *
 * 1. `verbatim`: the quote is a substring of the cited passage (or, if the citation is missing or wrong,
 *    of another passage), whitespace normalised → those exact characters.
 * 2. `repaired`: otherwise the cited passage's (else any passage's) sentence that best covers the quote's
 *    terms (IDF-weighted coverage ≥ `minCoverage`, see {@link alignSentences}) replaces it: a paraphrase is
 *    traced back to the sentence it paraphrases.
 * 3. `unsupported`: nothing in the passages carries the quote; the sentence best aligned with `fallbackQuery`
 *    (the requirement) is returned so a verdict still shows real text, and callers must lower the
 *    confidence below 0.7 (insufficient evidence).
 *
 * @param citedIndex 0-based index of the passage the model cited, or -1.
 * @returns null only when there are no passages with text.
 */
export function resolveEvidence(
  quote: string,
  passages: PassageInput[],
  citedIndex: number,
  fallbackQuery: string,
  minCoverage = 0.5,
): { passage: PassageInput; start: number; end: number; resolution: EvidenceResolution } | null {
  const cited = citedIndex >= 0 && citedIndex < passages.length ? passages[citedIndex] : null;
  const order = cited ? [cited, ...passages.filter((p) => p !== cited)] : passages;
  for (const p of order) {
    const hit = findVerbatim(p.text ?? '', quote);
    if (hit) return { passage: p, ...hit, resolution: 'verbatim' };
  }
  if (quote.trim()) {
    for (const scope of cited ? [[cited], passages] : [passages]) {
      const best = alignSentences(quote, scope)[0];
      if (best && best.coverage >= minCoverage) return { passage: best.unit.passage, start: best.unit.start, end: best.unit.end, resolution: 'repaired' };
    }
  }
  const fallback = alignSentences(fallbackQuery, cited ? [cited] : passages)[0] ?? alignSentences(fallbackQuery, passages)[0];
  if (!fallback) return null;
  return { passage: fallback.unit.passage, start: fallback.unit.start, end: fallback.unit.end, resolution: 'unsupported' };
}

import { alignSentences, jaccard, sentenceUnits, type Alignment } from './align';
import { makeQuote } from './pages';
import { usageOf } from './tokens';
import type { PassageInput, Quote, Usage } from './types';

/** An answer built from verbatim sentences of the passages, with inline [n] markers. */
export interface ExtractiveAnswer {
  answer: string;
  /** `index` is 1-based and matches exactly one "[index]" marker in `answer`. */
  citations: { index: number; quote: Quote; score: number }[];
  usage: Usage;
}

/** Default minimum IDF-weighted query-term coverage of a sentence for it to be quoted. */
export const DEFAULT_MIN_RELEVANCE = 0.34;

/** The answer given when no sentence is relevant enough. */
export const NO_RELEVANT_INFORMATION = 'No relevant information was found in the documents for this question.';

const collapse = (s: string) => s.replace(/\s+/g, ' ').trim();

/**
 * Composes an extractive answer: the sentences of the passages that best match the question, quoted
 * verbatim and cited inline as [1], [2], …  No language model is involved and the answer says so by
 * presenting itself as excerpts ("Based on the documents (verbatim excerpts): "…" [1] …").
 *
 * Selection: every sentence is scored by {@link alignSentences} (IDF-weighted coverage of the
 * question's content terms, with IDF over the sentences of the given passages as in BM25; plus passage
 * coverage, bigram overlap and the retrieval score). Sentences whose coverage is below `minRelevance` are
 * ignored. The best one is taken, then greedily the next best that still adds question terms not yet
 * covered or scores at least 80 % of the best, skipping near-duplicates (term Jaccard ≥ 0.7), up to
 * `maxSentences`.
 *
 * @param question the user's question (any length; only its content terms matter).
 * @param passages retrieved chunks, any order; quotes are exact substrings of their `text`.
 * @param options.maxSentences at most this many quotes (default 3, minimum 1).
 * @param options.minRelevance coverage threshold in [0, 1] (default {@link DEFAULT_MIN_RELEVANCE}).
 * @returns the answer, its citations (score = alignment score in [0, 1]) and estimated token usage
 *   (prompt = question + passages, completion = answer, see `countTokens`). When nothing is relevant:
 *   {@link NO_RELEVANT_INFORMATION} and no citations. Never throws.
 */
export function composeExtractiveAnswer(
  question: string,
  passages: PassageInput[],
  options: { maxSentences?: number; minRelevance?: number } = {},
): ExtractiveAnswer {
  const maxSentences = Math.max(1, Math.floor(options.maxSentences ?? 3));
  const minRelevance = options.minRelevance ?? DEFAULT_MIN_RELEVANCE;
  const prompt = [question, ...passages.map((p) => p.text ?? '')];
  const candidates = alignSentences(question, passages).filter((a) => a.coverage >= minRelevance && a.coverage > 0);
  if (candidates.length === 0) {
    return { answer: NO_RELEVANT_INFORMATION, citations: [], usage: usageOf(prompt, NO_RELEVANT_INFORMATION) };
  }
  const chosen: Alignment[] = [candidates[0]];
  const covered = new Set(candidates[0].matched);
  for (const c of candidates.slice(1)) {
    if (chosen.length >= maxSentences) break;
    if (chosen.some((x) => jaccard(x.unit.terms, c.unit.terms) >= 0.7)) continue;
    if (chosen.some((x) => x.unit.passage === c.unit.passage && x.unit.start === c.unit.start)) continue;
    const addsTerms = c.matched.some((t) => !covered.has(t));
    if (!addsTerms && c.score < 0.8 * chosen[0].score) continue;
    chosen.push(c);
    c.matched.forEach((t) => covered.add(t));
  }
  const citations = chosen.map((a, i) => ({
    index: i + 1,
    quote: makeQuote(a.unit.passage, a.unit.start, a.unit.end),
    score: Math.round(a.score * 1000) / 1000,
  }));
  const answer = `Based on the documents (verbatim excerpts): ${citations
    .map((c) => `"${collapse(c.quote.quote)}" [${c.index}]`)
    .join(' ')}`;
  return { answer, citations, usage: usageOf(prompt, answer) };
}

/**
 * The sentence of `passage` that best supports `claim` (a sentence of a generated answer, or the
 * question), as a verbatim {@link Quote}: the top sentence by {@link alignSentences}; when no
 * sentence shares a term with the claim, the passage's first sentence. Used to attach a verbatim
 * quote to a citation marker written by a chat model.
 *
 * @returns the quote (`passage.text.slice(start, end) === quote`) and its alignment score in [0, 1]
 *   (0 for the fallback); null only when the passage has no text.
 */
export function bestQuote(passage: PassageInput, claim: string): { quote: Quote; score: number } | null {
  const aligned = alignSentences(claim, [passage]);
  if (aligned.length > 0 && aligned[0].coverage > 0) {
    const a = aligned[0];
    return { quote: makeQuote(passage, a.unit.start, a.unit.end), score: Math.round(a.score * 1000) / 1000 };
  }
  const units = sentenceUnits([passage]);
  if (units.length === 0) return null;
  return { quote: makeQuote(passage, units[0].start, units[0].end), score: 0 };
}

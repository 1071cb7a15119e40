import { alignSentences, answerUnits, jaccard, sentenceUnits } from './align';
import { ANSWERABILITY_MODEL, assessAnswerability, decideAnswerability, type Answerability, type EmbedTexts, type ScoredSentence } from './answerability';
import { makeQuote } from './pages';
import { usageOf } from './tokens';
import type { PassageInput, Quote, Usage } from './types';

/** An answer built from verbatim sentences of the passages, with inline [n] markers. */
export interface ExtractiveAnswer {
  answer: string;
  /** `index` is 1-based and matches exactly one "[index]" marker in `answer`. */
  citations: { index: number; quote: Quote; score: number }[];
  /**
   * Calibrated probability in [0, 1] that the first citation answers the question
   * (decisions.md "Answerability": below 0.7 the sources may not answer it). With no citations, the
   * same probability for the best sentence that was not good enough to be quoted (0 with no passages).
   */
  confidence: number;
  usage: Usage;
}

/** The answer given when the passages do not answer the question (then `citations` is []). */
export const NO_RELEVANT_INFORMATION = 'No relevant information was found in the documents for this question.';

/** A further sentence is quoted only when the sentence model gives it at least this probability. */
export const EXTRA_SENTENCE_MIN_PROBABILITY = 0.5;

const collapse = (s: string) => s.replace(/\s+/g, ' ').trim();
const sigmoid = (z: number) => 1 / (1 + Math.exp(-z));
const round3 = (x: number) => Math.round(x * 1000) / 1000;

/**
 * Composes an extractive answer: whole sentences of the passages that answer the question, quoted
 * verbatim and cited inline as [1], [2], …, or a plain "not found" with no citations when the
 * passages do not answer it. No language model writes anything; the answer presents itself as
 * excerpts ("Based on the documents (verbatim excerpts): "…" [1] …").
 *
 * Selection and the decision come from {@link assessAnswerability} (a trained, calibrated model over
 * semantic similarity, term coverage, answer-type match and retrieval signals): when the passages
 * answer the question, the best sentence is cited first; up to `maxSentences − 1` further sentences
 * follow when the sentence model gives each at least {@link EXTRA_SENTENCE_MIN_PROBABILITY}, skipping
 * near-duplicates (term Jaccard ≥ 0.7). Sentences are never cut (`splitSentences` with `whole`).
 *
 * @param question the user's question (any length).
 * @param passages retrieved chunks, any order; quotes are exact substrings of their `text`.
 * @param options.maxSentences at most this many quotes (default 3, minimum 1).
 * @param options.embed embedding function for the semantic signals (`LocalEmbeddingModel.embed`);
 *   without it (or when it fails) the lexical variant of the model is used.
 * @returns the answer, its citations (score = the sentence model's probability, in [0, 1]), the
 *   calibrated `confidence` and estimated token usage (prompt = question + passages, completion =
 *   answer, see `countTokens`). Never throws.
 */
export async function composeAnswer(
  question: string,
  passages: PassageInput[],
  options: { maxSentences?: number; embed?: EmbedTexts } = {},
): Promise<ExtractiveAnswer> {
  return answerFrom(question, passages, await assessAnswerability(question, passages, { embed: options.embed }), options.maxSentences);
}

/**
 * {@link composeAnswer} without embeddings (the lexical variant of the answerability model),
 * synchronous: for callers that have no embedding model (offline evaluations).
 */
export function composeExtractiveAnswer(question: string, passages: PassageInput[], options: { maxSentences?: number } = {}): ExtractiveAnswer {
  const alignments = alignSentences(question, passages, answerUnits(passages));
  return answerFrom(
    question,
    passages,
    decideAnswerability(question, passages, alignments, null, ANSWERABILITY_MODEL.lexical, 'lexical'),
    options.maxSentences,
  );
}

function answerFrom(question: string, passages: PassageInput[], decision: Answerability, maxSentencesOption?: number): ExtractiveAnswer {
  const maxSentences = Math.max(1, Math.floor(maxSentencesOption ?? 3));
  const prompt = [question, ...passages.map((p) => p.text ?? '')];
  const confidence = round3(decision.confidence);
  if (!decision.answerable || decision.ranked.length === 0) {
    return { answer: NO_RELEVANT_INFORMATION, citations: [], confidence, usage: usageOf(prompt, NO_RELEVANT_INFORMATION) };
  }
  const chosen: ScoredSentence[] = [decision.ranked[0]];
  for (const c of decision.ranked.slice(1)) {
    if (chosen.length >= maxSentences) break;
    if (sigmoid(c.logit) < EXTRA_SENTENCE_MIN_PROBABILITY) break;
    const u = c.alignment.unit;
    if (chosen.some((x) => x.alignment.unit.passage === u.passage && x.alignment.unit.start === u.start)) continue;
    if (chosen.some((x) => jaccard(x.alignment.unit.terms, u.terms) >= 0.7)) continue;
    chosen.push(c);
  }
  const citations = chosen.map((c, i) => ({
    index: i + 1,
    quote: makeQuote(c.alignment.unit.passage, c.alignment.unit.start, c.alignment.unit.end),
    score: round3(sigmoid(c.logit)),
  }));
  const answer = `Based on the documents (verbatim excerpts): ${citations.map((c) => `"${collapse(c.quote.quote)}" [${c.index}]`).join(' ')}`;
  return { answer, citations, confidence, usage: usageOf(prompt, answer) };
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

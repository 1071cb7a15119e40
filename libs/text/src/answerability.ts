import { alignSentences, answerUnits, idfWeights, matchCredit, type Alignment } from './align';
import { analyze } from './analyze';
import type { PassageInput } from './types';
import trained from '../models/answerability/answerability-model.json';

/**
 * Embeds texts into L2-normalised vectors (cosine = dot product), e.g. `LocalEmbeddingModel.embed`
 * bound with priority `query`. One vector per text, in order.
 */
export type EmbedTexts = (texts: string[]) => Promise<number[][]>;

/** What a question asks for, from its wh-words (SQuAD-style answer types). */
export type AnswerType = 'frequency' | 'quantity' | 'time' | 'person' | 'place' | 'other';

const FREQUENCY_Q = /\b(how (often|frequently)|how many times|at what (interval|intervals|frequency))\b/i;
const FREQUENCY_RE =
  /\b(every|each|daily|weekly|monthly|quarterly|annually|annual|yearly|hourly|once|twice|times|per|always|regularly|periodically|interval|intervals)\b|\d+/gi;

const TIME_Q =
  /\b(when|what (year|years|date|day|month|century|decade|time|period|era|age)|which (year|years|date|day|month|century|decade|period|era)|how long ago|since when|until when|by when)\b/i;
const QUANTITY_Q =
  /\b(how (many|much|long|far|big|large|old|tall|high|heavy|fast|wide|deep|small)|what (percentage|percent|proportion|number|amount|fraction|share|size|rate|temperature|speed)|which number)\b/i;
const PERSON_Q = /\b(who|whom|whose|which (person|people|man|woman|king|president|scientist|group|company|organization))\b/i;
const PLACE_Q =
  /\b(where|what (country|city|state|region|place|continent|town|location|area|island|river)|which (country|city|state|region|place|continent|town|location|area|island|river))\b/i;

/**
 * The answer type a question asks for: `frequency` (how often, how many times …), `time` (when,
 * what year …), `quantity` (how many, how much, what percentage …), `person` (who, whose …), `place`
 * (where, what country …), else `other`. Checked in that order (so "how long ago" is a time, "how
 * long" a quantity).
 */
export function answerType(question: string): AnswerType {
  if (FREQUENCY_Q.test(question)) return 'frequency';
  if (TIME_Q.test(question)) return 'time';
  if (QUANTITY_Q.test(question)) return 'quantity';
  if (PERSON_Q.test(question)) return 'person';
  if (PLACE_Q.test(question)) return 'place';
  return 'other';
}

const MONTHS = 'january|february|march|april|may|june|july|august|september|october|november|december';
const TIME_RE = new RegExp(
  `\\b(1\\d{3}|20\\d{2})s?\\b|\\b\\d{1,2}(st|nd|rd|th) century\\b|\\bcentur(y|ies)\\b|\\b(${MONTHS})\\b|\\b\\d{1,2}[/.-]\\d{1,2}[/.-]\\d{2,4}\\b|\\b(BC|AD|BCE|CE)\\b`,
  'gi',
);
const NUMBER_WORDS =
  'one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty|hundred|hundreds|thousand|thousands|million|millions|billion|billions|dozen|half|third|quarter';
const QUANTITY_RE = new RegExp(`\\d+(?:[.,]\\d+)*\\s*%?|\\b(${NUMBER_WORDS})\\b`, 'gi');
/** Capitalised words not at the very start of the sentence: a rough named-entity detector. */
const ENTITY_RE = /(?<!^)(?<![.!?]\s)\b\p{Lu}[\p{L}'-]+/gu;

/** Lowercased items of `re` in `text`. */
const itemsOf = (text: string, re: RegExp): string[] => [...text.matchAll(re)].map((m) => m[0].toLowerCase().trim());

/**
 * 1 when `sentence` holds an item of the kind `type` asks for that is not already in `question`
 * (a frequency word or number for `frequency` — every, each, daily, once, per … —, a year or date for
 * `time`, a number for `quantity`, a capitalised name for `person`/`place`), else 0; always 0 for `other`.
 */
export function answerTypeMatch(type: AnswerType, question: string, sentence: string): number {
  if (type === 'other') return 0;
  const q = question.toLowerCase();
  const fresh = (items: string[]) => items.some((i) => i && !q.includes(i));
  if (type === 'frequency') return fresh(itemsOf(sentence, FREQUENCY_RE)) ? 1 : 0;
  if (type === 'time') return fresh(itemsOf(sentence, TIME_RE)) ? 1 : 0;
  if (type === 'quantity') return fresh(itemsOf(sentence, QUANTITY_RE)) ? 1 : 0;
  return fresh(itemsOf(sentence, ENTITY_RE)) ? 1 : 0;
}

/** Names of the sentence signals, in vector order (the trained weights follow this order). */
export const SENTENCE_FEATURES = [
  'semantic',
  'semantic_gap',
  'coverage',
  'coverage_gap',
  'bigram',
  'passage_coverage',
  'retrieval',
  'passage_rank',
  'typed',
  'type_match',
  'novelty',
  'log_terms',
  'negation_mismatch',
  'missing_idf_sentence',
  'missing_idf_passage',
] as const;

/** Names of the question-level signals of the confidence model, in vector order. */
export const QUESTION_FEATURES = [
  'top_logit',
  'margin',
  'max_semantic',
  'top_coverage',
  'typed',
  'type_match',
  'absent_terms',
  'absent_names',
  'top_passage_coverage',
  'top_negation_mismatch',
  'top_missing_idf_sentence',
  'top_missing_idf_passage',
] as const;

const NEGATION_RE = /\b(not|no|never|none|nor|without|n't|cannot|neither|nobody|nothing)\b|n't\b/i;

/**
 * Signals of the question against all the retrieved passages (not one sentence), in
 * {@link QUESTION_FEATURES} order from `absent_terms`: the share of the question's content terms
 * found in no passage, and 1 when a name or number of the question (a capitalised word after the
 * first, or digits) appears in no passage — what SQuAD 2.0's unanswerable questions typically change.
 */
export function questionContextSignals(question: string, passages: PassageInput[]): number[] {
  const all = passages.map((p) => p.text ?? '').join('\n');
  const lower = all.toLowerCase();
  const passageTerms = new Set(analyze(all));
  const qTerms = [...new Set(analyze(question))];
  const absent = qTerms.length ? qTerms.filter((t) => !passageTerms.has(t)).length / qTerms.length : 1;
  const names = [...question.matchAll(/(?<!^)\b\p{Lu}[\p{L}'-]+|\d+(?:[.,]\d+)*/gu)].map((m) => m[0].toLowerCase());
  const absentName = names.some((n) => !lower.includes(n)) ? 1 : 0;
  return [absent, absentName];
}

/** One candidate answer sentence with its signals. */
export interface ScoredSentence {
  alignment: Alignment;
  /** Cosine similarity question↔sentence (0 without an embedding model). */
  semantic: number;
  /** Signal vector, see {@link SENTENCE_FEATURES}. */
  features: number[];
  /** Sentence model's logit: how likely this sentence holds the answer (higher = likelier). */
  logit: number;
}

/** The answerability decision for one question over its retrieved passages. */
export interface Answerability {
  /** Candidates best first (by the sentence model). Empty when the passages have no sentences. */
  ranked: ScoredSentence[];
  /** Calibrated probability in [0, 1] that the best sentence answers the question. */
  confidence: number;
  /** True when `confidence` reaches the trained abstention cut-off (`threshold`): the answer cites; else "not found". */
  answerable: boolean;
  /** Question-level signal vector, see {@link QUESTION_FEATURES}; null when there is no candidate. */
  questionFeatures: number[] | null;
  /** Which trained parameters were used. */
  variant: 'semantic' | 'lexical';
  /** True when the coverage floor ({@link MIN_ANSWER_COVERAGE}) declined the question. */
  floor?: boolean;
}

/** Logistic regression (scikit-learn `LogisticRegression`): `coef · x + intercept`. */
interface Linear {
  coef: number[];
  intercept: number;
}
/** Platt scaling (Platt 1999): probability = sigmoid(a · decision + b), fitted by scikit-learn `LogisticRegression`. */
interface Platt {
  a: number;
  b: number;
}
/**
 * One trained variant: the sentence ranker, the confidence model and its calibration, and the
 * abstention cut-off `threshold` (below it the answer is "not found"; from it up to
 * {@link CONFIDENT_ANSWER} the question is answered with a confidence that says it may not be).
 */
export interface AnswerabilityParams {
  sentence: Linear;
  question: Linear;
  calibration: Platt;
  threshold: number;
  /** The coverage floor the cut-off was chosen with (train_answerability.py `MIN_ANSWER_COVERAGE`; equals {@link MIN_ANSWER_COVERAGE}). */
  min_answer_coverage?: number;
}

/** From this confidence on an answer is confident (decisions.md "Answerability": below 0.7 the sources may not answer the question). */
export const CONFIDENT_ANSWER = 0.7;

/**
 * The coverage floor: when no retrieved passage covers at least this share of the question's
 * IDF-weighted content terms (`passageCoverage` of {@link alignSentences}, in [0, 1]), the question is
 * not answered by these passages, whatever the model says. 0.34 is the relevance floor of the
 * extractive answerer before the trained model (`DEFAULT_MIN_RELEVANCE`, main until 3cf2a83),
 * restored under it; train_answerability.py counts the questions it declines in every figure and chooses the
 * cut-off with it (docs/agent.md "Answerability and confidence").
 */
export const MIN_ANSWER_COVERAGE = 0.34;

/** Confidence of an answer declined by the coverage floor is capped just below {@link CONFIDENT_ANSWER}: it cites nothing. */
const DECLINED_CONFIDENCE_CAP = 0.699;

/** The committed parameters (libs/text/models/answerability/answerability-model.json, `npm run train:answerability`). */
export const ANSWERABILITY_MODEL = trained as unknown as { semantic: AnswerabilityParams; lexical: AnswerabilityParams; trained: Record<string, unknown> };

const dot = (w: number[], x: number[]) => w.reduce((s, wi, i) => s + wi * (x[i] ?? 0), 0);

/** Decision value of a logistic regression (the log-odds, before the sigmoid). */
export function linearDecision(m: Linear, x: number[]): number {
  return dot(m.coef, x) + m.intercept;
}

/**
 * Platt-scaled probability of a decision value `v`: `1 / (1 + exp(-(a·v + b)))`, as scikit-learn's
 * `LogisticRegression.predict_proba` over the single feature `v` (Platt 1999, "Probabilistic outputs
 * for support vector machines"). In (0, 1).
 */
export function plattPredict(cal: Platt, v: number): number {
  return 1 / (1 + Math.exp(-(cal.a * v + cal.b)));
}

/**
 * Computes the signals of every sentence of `passages` for `question` (without the model): the
 * alignment of {@link alignSentences} (IDF-weighted coverage of the question's terms, bigrams,
 * passage coverage, relative retrieval score), the cosine similarity from `semantic` (one value per
 * alignment, in the same order; omit for lexical only), the passage's retrieval rank, the answer
 * type and whether the sentence holds an item of that type, and how much new content it brings.
 * Exported for the training script, which must compute exactly what runs in the service.
 */
export function sentenceSignals(
  question: string,
  alignments: Alignment[],
  semantic: number[] | null,
): { alignment: Alignment; semantic: number; features: number[] }[] {
  if (alignments.length === 0) return [];
  const type = answerType(question);
  const typed = type === 'other' ? 0 : 1;
  const qTerms = new Set(analyze(question));
  const sems = semantic ?? alignments.map(() => 0);
  const maxSem = Math.max(...sems);
  const maxCov = Math.max(...alignments.map((a) => a.coverage));
  // Passage ranks follow the retrieval scores (best = 0).
  const order = [...new Set(alignments.map((a) => a.unit.passageIndex))].sort(
    (i, j) => alignments.find((a) => a.unit.passageIndex === j)!.retrieval - alignments.find((a) => a.unit.passageIndex === i)!.retrieval || i - j,
  );
  const rank = new Map(order.map((p, r) => [p, r]));
  // The rarest question term a sentence (or its passage) lacks, as a share of the largest possible
  // IDF: a swapped name or detail is what makes a look-alike question unanswerable.
  const units = [...new Set(alignments.map((a) => a.unit))];
  const idf = idfWeights([...qTerms], units);
  const maxIdf = Math.log(1 + (units.length - 0.5) / 1.5) || 1;
  const passageTerms = new Map<number, Set<string>>();
  for (const u of units) {
    const set = passageTerms.get(u.passageIndex) ?? new Set<string>();
    u.terms.forEach((t) => set.add(t));
    passageTerms.set(u.passageIndex, set);
  }
  const missingIdf = (has: (t: string) => boolean) => Math.max(0, ...[...qTerms].filter((t) => !has(t)).map((t) => idf.get(t) ?? 0)) / maxIdf;
  return alignments.map((a, i) => {
    const terms = [...a.unit.terms];
    const novel = terms.length ? terms.filter((t) => !qTerms.has(t)).length / terms.length : 0;
    const features = [
      sems[i],
      sems[i] - maxSem,
      a.coverage,
      a.coverage - maxCov,
      a.bigram,
      a.passageCoverage,
      a.retrieval,
      1 / (1 + (rank.get(a.unit.passageIndex) ?? 0)),
      typed,
      answerTypeMatch(type, question, a.unit.text),
      novel,
      Math.log1p(terms.length),
      NEGATION_RE.test(question) !== NEGATION_RE.test(a.unit.text) ? 1 : 0,
      missingIdf((t) => matchCredit(t, a.unit.terms) > 0),
      missingIdf((t) => passageTerms.get(a.unit.passageIndex)!.has(t)),
    ];
    return { alignment: a, semantic: sems[i], features };
  });
}

/**
 * Question-level signals from the ranked candidates and {@link questionContextSignals} (see
 * {@link QUESTION_FEATURES}).
 */
export function questionSignals(ranked: ScoredSentence[], context: number[]): number[] | null {
  if (ranked.length === 0) return null;
  const top = ranked[0];
  const second = ranked[1]?.logit ?? top.logit - 5;
  return [
    top.logit,
    top.logit - second,
    Math.max(...ranked.map((r) => r.semantic)),
    top.alignment.coverage,
    top.features[8],
    top.features[9],
    context[0],
    context[1],
    top.alignment.passageCoverage,
    top.features[12],
    top.features[13],
    top.features[14],
  ];
}

/**
 * Decides whether the retrieved passages answer `question`, and which sentence does.
 *
 * Method (trained by `npm run train:answerability`, libs/text/models/answerability/train/): every whole sentence
 * of the passages gets the signals of {@link sentenceSignals}; a logistic regression over them ranks
 * the sentences (trained to find the sentence holding the gold answer of SQuAD 2.0 questions); a
 * second logistic regression over the best sentence's logit, its margin over the runner-up, the best
 * semantic similarity, the best coverage and the answer-type match gives a score that Platt scaling
 * calibrates into the probability that the best sentence holds the answer. When no passage covers
 * {@link MIN_ANSWER_COVERAGE} of the question's IDF-weighted content terms (the coverage floor), or
 * below the trained abstention cut-off, the question is treated as not answered by the passages; between it and
 * {@link CONFIDENT_ANSWER} it is answered, with a confidence that says the sources may not answer it.
 * With `embed` the `semantic` parameters are used, else the `lexical` ones (trained without the
 * similarity signals).
 *
 * @param passages retrieved chunks (their `score` is the retrieval score, higher = better).
 * @param options.embed embedding function; when it throws, the lexical variant is used.
 * @param options.sentences precomputed alignments (e.g. to reuse them), default {@link alignSentences}.
 * @returns the decision; confidence 0 and `answerable: false` when no sentence shares a term with the
 *   question; `answerable: false`, `floor: true` and a confidence capped below {@link CONFIDENT_ANSWER}
 *   when the coverage floor declines it.
 */
export async function assessAnswerability(
  question: string,
  passages: PassageInput[],
  options: { embed?: EmbedTexts; params?: { semantic: AnswerabilityParams; lexical: AnswerabilityParams } } = {},
): Promise<Answerability> {
  const params = options.params ?? ANSWERABILITY_MODEL;
  const alignments = alignSentences(question, passages, answerUnits(passages));
  let semantic: number[] | null = null;
  if (options.embed && alignments.length > 0) {
    try {
      const vectors = await options.embed([question, ...alignments.map((a) => a.unit.text)]);
      const q = vectors[0];
      semantic = vectors.slice(1).map((v) => dot(q, v));
    } catch {
      semantic = null;
    }
  }
  return decideAnswerability(question, passages, alignments, semantic, semantic ? params.semantic : params.lexical, semantic ? 'semantic' : 'lexical');
}

/** The model part of {@link assessAnswerability}, given the alignments and similarities (used by the training check). */
export function decideAnswerability(
  question: string,
  passages: PassageInput[],
  alignments: Alignment[],
  semantic: number[] | null,
  p: AnswerabilityParams,
  variant: 'semantic' | 'lexical',
): Answerability {
  const signals = sentenceSignals(question, alignments, semantic);
  const ranked: ScoredSentence[] = signals
    .map((s) => ({ ...s, logit: linearDecision(p.sentence, s.features) }))
    .sort((a, b) => b.logit - a.logit || a.alignment.unit.passageIndex - b.alignment.unit.passageIndex || a.alignment.unit.start - b.alignment.unit.start);
  const questionFeatures = questionSignals(ranked, questionContextSignals(question, passages));
  // A question that shares no content word with any sentence is not answered by these passages,
  // however close in meaning the embedding model finds them (an off-topic question still has a
  // positive cosine): the one abstention that needs no cut-off.
  if (!questionFeatures || ranked.every((r) => r.alignment.coverage === 0)) {
    return { ranked, confidence: 0, answerable: false, questionFeatures, variant };
  }
  const confidence = Math.min(1, Math.max(0, plattPredict(p.calibration, linearDecision(p.question, questionFeatures))));
  // The coverage floor: no passage holds enough of what the question asks about.
  if (Math.max(...ranked.map((r) => r.alignment.passageCoverage)) < MIN_ANSWER_COVERAGE) {
    return { ranked, confidence: Math.min(confidence, DECLINED_CONFIDENCE_CAP), answerable: false, questionFeatures, variant, floor: true };
  }
  return { ranked, confidence, answerable: confidence >= p.threshold, questionFeatures, variant };
}

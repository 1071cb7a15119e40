import { alignSentences, idfWeights, sentenceUnits, type Alignment, type SentenceUnit } from './align';
import type { RankedUnit } from './evidence';
import { analyze, tokenize } from './analyze';
import { clockConflict } from './clock';
import { antonymFlips, isRestriction, requirementSign, scopedSign } from './polarity';
import { compareQuantities, extractQuantities, type Quantity } from './quantities';
import type { PassageInput } from './types';

/**
 * Sentence embeddings handed to the judge by a caller that has an embedding model (the check service):
 * `query` is the requirement's vector, `sentences` the vectors of (some of) the passages' sentences keyed
 * by {@link unitKey}. Vectors are L2-normalised, so cosine similarity is their dot product.
 */
export interface SemanticInput {
  query: number[];
  sentences: Map<string, number[]>;
  /**
   * Entailment-model scores of (some of) the candidate sentences as premise against the requirement as
   * hypothesis, keyed by {@link unitKey}: [P(entailment), P(contradiction), P(neutral)] (the check service's
   * `LocalNliModel`, scored on the first {@link NLI_CANDIDATES} of {@link rankEvidence}). Absent: no model.
   */
  nli?: Map<string, [number, number, number]>;
  /**
   * The requirement-satisfaction model's reading of the candidates (`unitCandidates` of `rankUnits`: the best
   * unit of each of the {@link RSM_CANDIDATES} chunks retrieval ranks highest, in that order): [P(satisfies), P(contradicts), P(unrelated)] of
   * each unit against the requirement's core statement. Absent: no model.
   */
  rsm?: RsmReading[];
}

/** One evidence unit as the requirement-satisfaction model read it. */
export interface RsmReading {
  unit: RankedUnit;
  /** [P(satisfies), P(contradicts), P(unrelated)] */
  scores: [number, number, number];
  /**
   * Cosine similarity of the core statement to the unit's top heading ({@link topHeading}: in a policy or
   * procedure, the document's title), or null when its chunk has no heading or no vector was computed.
   */
  titleSimilarity?: number | null;
}

/** Evidence units (from distinct chunks) the requirement-satisfaction model reads per requirement. */
export const RSM_CANDIDATES = 4;

/**
 * Weight of the first stage's score (`rankUnits`) next to P(satisfies) when the judge chooses the evidence among
 * the candidates: on the `fit` frameworks of eval:controls, P(satisfies) + 0.5 × score chose a unit of a mapped
 * procedure more often than P(satisfies) alone (28.3 % against 27.2 % of requirements, first version of the model).
 */
export const EVIDENCE_PRIOR_WEIGHT = 0.5;

/**
 * Weight of the top heading's meaning ({@link RsmReading.titleSimilarity}, as a difference from the mean over the
 * candidates that have one; a unit without a heading neither gains nor loses) when the judge chooses the evidence
 * among the candidates the model reads as satisfying nearly as well as the best ({@link TITLE_PRIOR_MARGIN}): a
 * procedure whose title names the obligation is the one that implements it more often than a passage of another
 * procedure that the model reads alike. Chosen on the `fit` frameworks of eval:controls (the candidates' readings
 * dumped once; weights 0 to 10 and margins 0.1 to 1 tried): weight 3 within 0.2 chose a unit of a mapped procedure
 * for 33.0 % of the requirements against 27.9 % without it, the chosen unit's P(satisfies) 0.022 below the best
 * candidate's on average; without the margin 33.6 %, but 0.071 below, which turns verdicts into NOT_FOUND.
 */
export const TITLE_PRIOR_WEIGHT = 3;

/** How far below the best candidate's P(satisfies) a candidate may be read and still be chosen for its title (see {@link TITLE_PRIOR_WEIGHT}). */
export const TITLE_PRIOR_MARGIN = 0.2;

/** The first heading of a section path ("Incident Management Process > I - Identification" → "Incident Management Process"), or null. */
export function topHeading(section: string | null | undefined): string | null {
  const first = section?.split(' > ')[0]?.trim();
  return first ? first : null;
}

/**
 * The evidence among the candidates the model read: the highest P(satisfies) + {@link EVIDENCE_PRIOR_WEIGHT} ×
 * first-stage score + {@link TITLE_PRIOR_WEIGHT} × (title similarity − the candidates' mean title similarity), among
 * the candidates read as satisfying within {@link TITLE_PRIOR_MARGIN} of the best and the one the first two terms
 * alone would choose. Two units the model reads alike, 0.70 and 0.71, are
 * told apart by how well each matches the requirement's words and meaning, and by whether the document it stands in
 * is about the requirement's subject.
 * @throws nothing; `reading` must not be empty.
 */
export function evidenceOfReading(reading: RsmReading[]): RsmReading {
  const titled = reading.filter((r) => typeof r.titleSimilarity === 'number');
  const meanTitle = titled.length ? titled.reduce((s, r) => s + r.titleSimilarity!, 0) / titled.length : 0;
  const top = Math.max(...reading.map((r) => r.scores[0]));
  const prior = (r: RsmReading) => r.scores[0] + EVIDENCE_PRIOR_WEIGHT * r.unit.score;
  const value = (r: RsmReading) => prior(r) + (typeof r.titleSimilarity === 'number' ? TITLE_PRIOR_WEIGHT * (r.titleSimilarity - meanTitle) : 0);
  // Without titles this is the choice by `prior` alone (that unit stays eligible even when read below the margin).
  const base = reading.reduce((best, r) => (prior(r) > prior(best) ? r : best));
  return reading.filter((r) => r === base || r.scores[0] >= top - TITLE_PRIOR_MARGIN).reduce((best, r) => (value(r) > value(best) ? r : best));
}

/**
 * Names of the requirement-satisfaction signals, appended to {@link SIGNAL_NAMES} in the `rsm` variant of the
 * trained judge: over the scored candidates, the highest P(satisfies), the second highest, their mean, the
 * highest P(contradicts); of the unit read as satisfying best, its P(contradicts), P(unrelated), cosine
 * similarity and term coverage; P(satisfies) of the unit of the chunk retrieval ranked first; the share of the
 * requirement's terms in the section title the best unit stands under (a section whose heading names the
 * obligation is where it is met).
 */
export const RSM_SIGNAL_NAMES = [
  'rsm_satisfies_max',
  'rsm_satisfies_second',
  'rsm_satisfies_mean',
  'rsm_contradicts_max',
  'rsm_contradicts_of_best',
  'rsm_unrelated_of_best',
  'rsm_similarity_of_best',
  'rsm_coverage_of_best',
  'rsm_satisfies_first_retrieved',
  'rsm_heading_of_best',
] as const;

/**
 * The {@link RSM_SIGNAL_NAMES} values of a reading, the evidence (`best`: {@link evidenceOfReading}), the evidence
 * the choice without titles would take (`untitled`) and the unit read as contradicting most (`contradicting`).
 * @returns null for an empty reading.
 */
export function rsmSignals(reading: RsmReading[] | undefined): { vector: number[]; best: RsmReading; untitled: RsmReading; contradicting: RsmReading } | null {
  if (!reading || reading.length === 0) return null;
  const bySat = [...reading].sort((a, b) => b.scores[0] - a.scores[0]);
  const best = evidenceOfReading(reading);
  const untitled = evidenceOfReading(reading.map((r) => ({ ...r, titleSimilarity: null })));
  const contradicting = [...reading].sort((a, b) => b.scores[1] - a.scores[1])[0];
  const mean = reading.reduce((s, r) => s + r.scores[0], 0) / reading.length;
  return {
    vector: [
      best.scores[0],
      bySat[1]?.scores[0] ?? 0,
      mean,
      contradicting.scores[1],
      best.scores[1],
      best.scores[2],
      best.unit.similarity,
      best.unit.coverage,
      reading[0].scores[0],
      best.unit.headingCoverage,
    ],
    best,
    untitled,
    contradicting,
  };
}

/** Candidate sentences (best first by {@link rankEvidence}) that the entailment model scores per requirement. */
export const NLI_CANDIDATES = 3;

/**
 * Names of the entailment-model signals, appended to {@link SIGNAL_NAMES} in the `nli` variant of the
 * trained judge: P(entailment) and P(contradiction) of the chosen evidence sentence, and the highest of
 * each over the scored candidates.
 */
export const NLI_SIGNAL_NAMES = ['nli_entail_best', 'nli_contradict_best', 'nli_entail_max', 'nli_contradict_max'] as const;

/** Key of a sentence unit in {@link SemanticInput.sentences}: passage index and character offsets. */
export const unitKey = (u: SentenceUnit): string => `${u.passageIndex}:${u.start}:${u.end}`;

/** Most sentences embedded per judgement (bounds the embedding cost of one verify). */
export const MAX_SEMANTIC_SENTENCES = 24;

/**
 * The sentences worth embedding for one requirement: every sentence of the two best-ranked passages
 * (a paraphrase there shares no words, yet retrieval ranked its passage first) and then the best
 * lexically aligned sentences of the rest, at most {@link MAX_SEMANTIC_SENTENCES} in all, without duplicates.
 *
 * @returns units in the order of `sentenceUnits(passages)` restricted to the chosen ones.
 */
export function semanticCandidates(
  requirement: string,
  passages: PassageInput[],
  units = sentenceUnits(passages),
  max = MAX_SEMANTIC_SENTENCES,
): SentenceUnit[] {
  const chosen = new Set<SentenceUnit>();
  const byRank = passages.map((p, i) => ({ i, s: Number.isFinite(p.score) ? p.score : 0 })).sort((a, b) => b.s - a.s || a.i - b.i);
  const top = new Set(byRank.slice(0, 2).map((x) => x.i));
  for (const u of units) if (top.has(u.passageIndex) && chosen.size < max / 2) chosen.add(u);
  for (const a of alignSentences(requirement, passages, units)) {
    if (chosen.size >= max) break;
    chosen.add(a.unit);
  }
  return units.filter((u) => chosen.has(u));
}

/** Names of the judge's input signals, in vector order (the trained model's `features`). */
export const SIGNAL_NAMES = [
  'coverage_best', // IDF-weighted share of the requirement's content terms in the chosen sentence
  'coverage_max', // the same, best over all sentences
  'bigram_best', // share of the requirement's adjacent term pairs in the chosen sentence
  'passage_coverage_best', // coverage by the chosen sentence's whole passage
  'retrieval_best', // retrieval score of that passage relative to the best passage
  'requirement_terms', // ln(1 + distinct content terms) / 3
  'similarity_best', // cosine similarity requirement · chosen sentence (0 without embeddings)
  'similarity_max', // best cosine over the embedded sentences
  'similarity_gap', // best − second best cosine
  'similarity_mean_top5', // mean of the five best cosines
  'quantity_in_requirement',
  'quantity_satisfied', // a requirement quantity met by a quantity of the chosen sentence
  'quantity_conflict_best', // same dimension, none meeting it ("at least 42 in" vs "39 in")
  'quantity_conflict_any', // … in one of the candidate sentences
  'clock_conflict', // times of day that cannot both hold ("not before 7 a.m." vs "from 6 a.m.")
  'clock_consistent', // a time window inside the requirement's
  'numbers_shared', // share of the requirement's numbers found in the chosen sentence (1 when it has none)
  'requirement_negated', // "must not", "never", "prohibited", …
  'evidence_negated_best', // negation near the requirement's terms in the chosen sentence
  'evidence_negated_any',
  'polarity_mismatch_best',
  'polarity_mismatch_any',
  'antonym_best', // antonym pairs or opposite directions of change ("open"/"closed", "reduces"/"increases")
  'antonym_any',
  'both_restrict', // both state a restriction ("only", "not … except")
  'requirement_obligation', // must, shall, required, mandatory
  'requirement_permission', // may, can, allowed, permitted, optional
  'evidence_obligation',
  'evidence_permission',
  'evidence_optional', // optional, voluntary, at its discretion, encouraged, recommended
  'modality_weaker', // the requirement obliges, the evidence only permits or recommends
  'requirement_universal', // all, every, any, each, always, never
  'evidence_limited', // some, certain, except, unless, only, limited, partially
  'hedged', // may, might, could, suggest, possibly, likely, associated
  'coverage_x_mismatch', // coverage_best × polarity_mismatch_any
  'similarity_x_negated', // similarity_best × evidence_negated_best
  'coverage_x_similarity', // coverage_best × similarity_best
] as const;

export type SignalName = (typeof SIGNAL_NAMES)[number];

/** What made a candidate sentence read as contradicting the requirement (for the explanation). */
export interface ConflictCue {
  kind: 'quantity' | 'clock' | 'polarity' | 'antonym';
  alignment: Alignment;
  detail: string;
}

/** The judge's view of one requirement against its passages. */
export interface VerdictSignals {
  /** Values in {@link SIGNAL_NAMES} order. */
  vector: number[];
  /** Whether sentence embeddings took part (selects the trained model variant). */
  semantic: boolean;
  /** The sentence chosen as the best evidence (by meaning and words), null when there is none. */
  best: Alignment | null;
  /** Cosine similarity of `best` (null without embeddings). */
  bestSimilarity: number | null;
  /** The first contradiction cue found among the candidate sentences. */
  conflict: ConflictCue | null;
  /** Content words of the requirement that the chosen sentence lacks (surface forms). */
  missing: string[];
  /**
   * A sentence that states the whole requirement word for word (see {@link statesVerbatim}) with no
   * negation, antonym, quantity or time conflict against it; null when none does. Not a model signal:
   * the judge's decision rules use it (judge.ts).
   */
  verbatim: Alignment | null;
  /**
   * An explicit conflict between the requirement and the chosen sentence itself: a quantity or time that
   * cannot both hold, a negation or prohibition against an affirmation, or an antonym pair (the `_best`
   * signals). Not a model signal: the judge's decision rules use it.
   */
  conflictOnBest: boolean;
  /** Values in {@link NLI_SIGNAL_NAMES} order when entailment scores took part (`semantic.nli`), else null. */
  nli: number[] | null;
  /** The scored candidate with the highest P(contradiction), and that probability (null without scores). */
  nliContradiction: { alignment: Alignment; probability: number } | null;
}

/** Lower-case words and digits of a text joined by single spaces (punctuation and case ignored). */
const wordsOf = (text: string): string =>
  text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();

/** Fewest words a requirement needs before a verbatim statement of it counts (shorter ones are too generic). */
export const VERBATIM_MIN_WORDS = 4;

/**
 * True when `sentence` contains the whole `requirement` word for word (case and punctuation ignored, at
 * word boundaries) and the requirement has at least {@link VERBATIM_MIN_WORDS} words:
 * "Visitors must sign in at the reception desk." in "Visitors must sign in at the reception desk before
 * entering the site." A document that says what the requirement says, in its words, states it.
 */
export function statesVerbatim(requirement: string, sentence: string): boolean {
  const req = wordsOf(requirement);
  if (req.split(' ').length < VERBATIM_MIN_WORDS) return false;
  return ` ${wordsOf(sentence)} `.includes(` ${req} `);
}

/** Share of the lexical score in the evidence-selection score when embeddings are present (the rest is cosine). */
export const LEXICAL_SELECTION_WEIGHT = 0.4;
/** Candidate sentences checked for contradiction cues. */
export const CONTRADICTION_CANDIDATES = 3;

const OBLIGATION = /\b(?:must|shall|required|requires|require|mandatory|obligated|obliged|needs?\s+to|has\s+to|have\s+to|is\s+to|are\s+to)\b/i;
const PERMISSION = /\b(?:may|can|allowed|permitted|permissible|entitled|free\s+to|optional|discretion)\b/i;
const OPTIONAL =
  /\b(?:optional|voluntary|voluntarily|discretion|discretionary|encouraged|recommended|should|where\s+possible|where\s+practicable|if\s+possible|as\s+appropriate)\b/i;
const PROHIBITION = /\b(?:must\s+not|shall\s+not|may\s+not|cannot|can\s*not|prohibited|forbidden|not\s+permitted|not\s+allowed|never)\b/i;
const UNIVERSAL = /\b(?:all|every|any|each|always|never|no\s+\w+\s+(?:shall|may|must))\b/i;
const LIMITED = /\b(?:some|certain|except|unless|only|limited|partially|partly|selected|particular|specific|most|several|few)\b/i;
const HEDGE = /\b(?:may|might|could|suggests?|suggested|possibly|possible|likely|potential(?:ly)?|associated|correlat\w*|appears?|seems?)\b/i;

const dot = (a: number[], b: number[]): number => {
  let s = 0;
  for (let i = 0; i < a.length && i < b.length; i++) s += a[i] * b[i];
  return s;
};

/** Numbers written in digits in a text ("85", "7", "256"), for {@link SIGNAL_NAMES} `numbers_shared`. */
function numbersOf(text: string): Set<string> {
  return new Set(
    tokenize(text)
      .filter((t) => /^\d+(?:\.\d+)?$/.test(t.norm))
      .map((t) => t.norm),
  );
}

function quantityCheck(reqQ: Quantity[], sentence: string) {
  return reqQ.length ? compareQuantities(reqQ, extractQuantities(sentence)) : { conflict: null, satisfied: 0 };
}

function polarityOf(requirement: string, sentence: string, idf: Map<string, number>) {
  const req = requirementSign(requirement);
  const flips = antonymFlips(requirement, sentence);
  const bothRestrict = isRestriction(requirement) && isRestriction(sentence);
  const scoped = scopedSign(sentence, idf);
  const evSign = bothRestrict ? req.sign : scoped.sign;
  // A negated requirement needs an explicit permission/obligation in the sentence to be contradicted.
  const mismatch = evSign !== req.sign && (bothRestrict || evSign === -1 || scoped.explicit);
  return { req, flips, bothRestrict, scoped, evSign, mismatch };
}

/**
 * Every sentence of `passages` as evidence for `requirement`, best first: by lexical alignment
 * (`alignSentences`), or with `semantic` by {@link LEXICAL_SELECTION_WEIGHT} × lexical score + (1 − it) ×
 * cosine similarity. `ranked[0]` is the evidence sentence {@link verdictSignals} chooses; the check service
 * scores the first {@link NLI_CANDIDATES} with its entailment model.
 *
 * @returns the units, their alignments (in unit order and ranked), the cosine of each embedded one, and
 *   whether embeddings took part. Never throws.
 */
export function rankEvidence(requirement: string, passages: PassageInput[], semantic?: SemanticInput) {
  const units = sentenceUnits(passages);
  const aligned = alignSentences(requirement, passages, units);
  const useSemantic = !!semantic && semantic.query.length > 0 && semantic.sentences.size > 0;
  const sims = new Map<Alignment, number>();
  if (useSemantic)
    for (const a of aligned) {
      const v = semantic.sentences.get(unitKey(a.unit));
      if (v) sims.set(a, dot(semantic.query, v));
    }
  const selection = (a: Alignment) => (useSemantic ? LEXICAL_SELECTION_WEIGHT * a.score + (1 - LEXICAL_SELECTION_WEIGHT) * (sims.get(a) ?? 0) : a.score);
  const ranked = [...aligned].sort((a, b) => selection(b) - selection(a));
  return { units, aligned, ranked, sims, useSemantic };
}

/**
 * Computes the judge's signals for one requirement against retrieved passages.
 *
 * Evidence selection: every sentence is aligned lexically (`alignSentences`: IDF-weighted coverage,
 * bigrams, passage coverage, retrieval rank); with `semantic`, the selection score is
 * {@link LEXICAL_SELECTION_WEIGHT} × lexical score + (1 − it) × cosine similarity, so a paraphrase
 * ("exceeds" for "above") is chosen by meaning while shared words still count. The chosen sentence and the
 * next {@link CONTRADICTION_CANDIDATES} − 1 are checked for contradiction cues: quantities with units and
 * direction (`quantities.ts`), times of day (`clock.ts`), negation in scope of the requirement's terms and
 * antonym pairs (`polarity.ts`), modality and scope words (regular expressions above).
 *
 * @param semantic embeddings of the requirement and of some sentences (see {@link semanticCandidates});
 *   sentences without a vector are selected lexically only.
 * @returns the signal vector in {@link SIGNAL_NAMES} order plus what the explanation needs. Never throws.
 */
export function verdictSignals(
  requirement: string,
  passages: PassageInput[],
  semantic?: SemanticInput,
  options: { modalityText?: string; verbatimText?: string } = {},
): VerdictSignals {
  // The modality, negation and scope of the requirement are read from the whole text when the caller matches
  // the evidence against the core statement only (framing such as "The organization shall" carries them).
  const full = options.modalityText ?? requirement;
  const { units, aligned, ranked, sims, useSemantic } = rankEvidence(requirement, passages, semantic);
  const best = ranked[0] ?? null;
  const reqTerms = [...new Set(analyze(requirement))];
  const idf = idfWeights(reqTerms, units);
  const reqQ = extractQuantities(requirement);
  const candidates = ranked.slice(0, CONTRADICTION_CANDIDATES);

  const simValues = [...sims.values()].sort((a, b) => b - a);
  const bestSim = best && useSemantic ? (sims.get(best) ?? 0) : null;
  const reqNumbers = numbersOf(requirement);

  let conflict: ConflictCue | null = null;
  let qConflictAny = 0;
  let mismatchAny = 0;
  let antonymAny = 0;
  let negAny = 0;
  for (const a of candidates) {
    const q = quantityCheck(reqQ, a.unit.text);
    const c = clockConflict(requirement, a.unit.text);
    const p = polarityOf(full, a.unit.text, idf);
    if (q.conflict) qConflictAny = 1;
    if (p.mismatch) mismatchAny = 1;
    if (p.flips.length) antonymAny = 1;
    if (p.scoped.sign === -1) negAny = 1;
    if (conflict) continue;
    if (q.conflict)
      conflict = {
        kind: 'quantity',
        alignment: a,
        detail: `the requirement calls for "${collapse(q.conflict.required.text)}" but the document states "${collapse(q.conflict.found.text)}"`,
      };
    else if (c.conflict) conflict = { kind: 'clock', alignment: a, detail: c.detail };
    else if ((p.mismatch ? 1 : 0) + p.flips.length === 1 && p.flips.length === 1) {
      conflict = { kind: 'antonym', alignment: a, detail: `the requirement says "${p.flips[0].required}" where the document says "${p.flips[0].found}"` };
    } else if (p.mismatch && p.flips.length === 0) {
      conflict = {
        kind: 'polarity',
        alignment: a,
        detail:
          p.evSign === -1
            ? `the document negates or prohibits it (${p.scoped.cues.map((x) => `"${x}"`).join(', ') || 'negation'})`
            : `the requirement is negated (${p.req.cues.map((x) => `"${x}"`).join(', ')}) while the document states it affirmatively`,
      };
    }
  }

  const v: Record<SignalName, number> = Object.fromEntries(SIGNAL_NAMES.map((n) => [n, 0])) as Record<SignalName, number>;
  v.requirement_terms = Math.log(1 + reqTerms.length) / 3;
  v.quantity_in_requirement = reqQ.length ? 1 : 0;
  v.requirement_negated = requirementSign(full).sign === -1 || PROHIBITION.test(full) ? 1 : 0;
  v.requirement_obligation = OBLIGATION.test(full) ? 1 : 0;
  v.requirement_permission = PERMISSION.test(full) ? 1 : 0;
  v.requirement_universal = UNIVERSAL.test(full) ? 1 : 0;
  v.quantity_conflict_any = qConflictAny;
  v.polarity_mismatch_any = mismatchAny;
  v.antonym_any = antonymAny;
  v.evidence_negated_any = negAny;
  if (simValues.length) {
    v.similarity_max = simValues[0];
    v.similarity_gap = simValues[0] - (simValues[1] ?? 0);
    const top = simValues.slice(0, 5);
    v.similarity_mean_top5 = top.reduce((s, x) => s + x, 0) / top.length;
  }
  v.coverage_max = aligned.reduce((m, a) => Math.max(m, a.coverage), 0);
  let missing: string[] = [];
  if (best) {
    const s = best.unit.text;
    const q = quantityCheck(reqQ, s);
    const c = clockConflict(requirement, s);
    const p = polarityOf(full, s, idf);
    v.coverage_best = best.coverage;
    v.bigram_best = best.bigram;
    v.passage_coverage_best = best.passageCoverage;
    v.retrieval_best = best.retrieval;
    v.similarity_best = bestSim ?? 0;
    v.quantity_satisfied = q.satisfied > 0 ? 1 : 0;
    v.quantity_conflict_best = q.conflict ? 1 : 0;
    v.clock_conflict = c.conflict ? 1 : 0;
    v.clock_consistent = c.consistent ? 1 : 0;
    const found = numbersOf(s);
    v.numbers_shared = reqNumbers.size ? [...reqNumbers].filter((n) => found.has(n)).length / reqNumbers.size : 1;
    v.evidence_negated_best = p.scoped.sign === -1 ? 1 : 0;
    v.polarity_mismatch_best = p.mismatch ? 1 : 0;
    v.antonym_best = p.flips.length ? 1 : 0;
    v.both_restrict = p.bothRestrict ? 1 : 0;
    v.evidence_obligation = OBLIGATION.test(s) ? 1 : 0;
    v.evidence_permission = PERMISSION.test(s) ? 1 : 0;
    v.evidence_optional = OPTIONAL.test(s) ? 1 : 0;
    v.modality_weaker = v.requirement_obligation && !v.requirement_negated && !v.evidence_obligation && (v.evidence_permission || v.evidence_optional) ? 1 : 0;
    v.evidence_limited = LIMITED.test(s) ? 1 : 0;
    v.hedged = HEDGE.test(s) ? 1 : 0;
    missing = missingWords(requirement, best.unit.terms);
  }
  let verbatim: Alignment | null = null;
  for (const a of ranked) {
    // `verbatimText`: the requirement without its title (judgeRequirement's `title`), which a sentence may state too.
    if (!statesVerbatim(requirement, a.unit.text) && !(options.verbatimText && statesVerbatim(options.verbatimText, a.unit.text))) continue;
    const p = polarityOf(full, a.unit.text, idf);
    if (p.mismatch || p.flips.length || p.scoped.sign === -1 || quantityCheck(reqQ, a.unit.text).conflict || clockConflict(requirement, a.unit.text).conflict)
      continue;
    verbatim = a;
    break;
  }
  const conflictOnBest = !!(v.quantity_conflict_best || v.clock_conflict || v.polarity_mismatch_best || v.antonym_best);
  v.coverage_x_mismatch = v.coverage_best * v.polarity_mismatch_any;
  v.similarity_x_negated = v.similarity_best * v.evidence_negated_best;
  v.coverage_x_similarity = v.coverage_best * v.similarity_best;
  // Entailment-model signals: the chosen sentence's scores and the best over the scored candidates.
  let nli: number[] | null = null;
  let nliContradiction: VerdictSignals['nliContradiction'] = null;
  if (useSemantic && semantic!.nli && semantic!.nli.size > 0 && best) {
    const scores = semantic!.nli;
    const ofBest = scores.get(unitKey(best.unit)) ?? [0, 0, 1];
    let entailMax = 0;
    for (const a of ranked) {
      const s = scores.get(unitKey(a.unit));
      if (!s) continue;
      entailMax = Math.max(entailMax, s[0]);
      if (!nliContradiction || s[1] > nliContradiction.probability) nliContradiction = { alignment: a, probability: s[1] };
    }
    nli = [ofBest[0], ofBest[1], entailMax, nliContradiction?.probability ?? 0];
  }
  return {
    vector: SIGNAL_NAMES.map((n) => v[n]),
    semantic: useSemantic,
    best,
    bestSimilarity: bestSim,
    conflict,
    missing,
    verbatim,
    conflictOnBest,
    nli,
    nliContradiction,
  };
}

const collapse = (s: string) => s.replace(/\s+/g, ' ').trim();

/** Content words of the requirement (surface forms, first occurrence) whose stem the sentence lacks. */
function missingWords(requirement: string, terms: Set<string>): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  for (const t of tokenize(requirement)) {
    const stem = analyze(t.norm)[0];
    if (!stem || seen.has(stem)) continue;
    seen.add(stem);
    if (!terms.has(stem)) out.push(requirement.slice(t.start, t.end));
  }
  return out;
}

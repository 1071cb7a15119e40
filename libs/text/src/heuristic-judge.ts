import { alignSentences, idfWeights, matchCredit, sentenceUnits, type Alignment } from './align';
import { analyze } from './analyze';
import { makeQuote } from './pages';
import { antonymFlips, isRestriction, requirementSign, scopedSign } from './polarity';
import { compareQuantities, extractQuantities, type Quantity } from './quantities';
import { usageOf } from './tokens';
import { collapse, keywords, noSentenceExplanation, notFoundRecommendation, pct, where, type Judgement } from './judge';
import type { PassageInput } from './types';

/**
 * The hand-tuned heuristic judge that the check service used before the learned judge (`judge.ts`). It is
 * kept only so that `npm run eval:verdicts -- --baseline` measures "before" with the same command and split;
 * nothing in the services calls it.
 */
/** Tunable constants of the judge; the defaults were chosen on SciFact train and ContractNLI dev through the real chunker and index (tools/eval/verdicts.ts). */
export interface JudgeParams {
  /** Below this IDF-weighted coverage of the best sentence the verdict is NOT_FOUND. */
  notFoundCoverage: number;
  /** How many of the best-aligned sentences are checked for a contradiction. */
  candidates: number;
  /** A candidate other than the best must score at least this share of the best score. */
  candidateRatio: number;
  /** Whether antonym pairs count as a contradiction signal. */
  antonyms: boolean;
  /** Whether a negation mismatch counts as a contradiction signal. */
  polarity: boolean;
  /** Whether conflicting quantities count as a contradiction signal. */
  quantities: boolean;
  /**
   * A sentence that contains every term of the requirement's subject ("smoking" in "smoking is allowed in
   * designated areas") is checked for a contradiction from this coverage on, even below `notFoundCoverage`:
   * a prohibition of the subject contradicts a permission whatever the qualifiers.
   */
  topicContradictionCoverage: number;
}

export const DEFAULT_JUDGE_PARAMS: JudgeParams = {
  notFoundCoverage: 0.4,
  candidates: 2,
  candidateRatio: 0.7,
  antonyms: true,
  polarity: true,
  quantities: true,
  topicContradictionCoverage: 0.3,
};

const VERB_MARKER_RE = /\b(?:must|shall|should|will|may|can|cannot|is|are|was|were|be|has|have|had|does|do|did|need|needs)\b/i;

/** Content terms of the requirement's subject: the words before its first modal or auxiliary verb. */
function topicTerms(requirement: string): string[] | null {
  const m = requirement.match(VERB_MARKER_RE);
  if (!m || !m.index) return null;
  const terms = [...new Set(analyze(requirement.slice(0, m.index)))];
  return terms.length ? terms : null;
}

/** What made a sentence contradict the requirement. */
interface Conflict {
  kind: 'polarity' | 'antonym' | 'quantity';
  alignment: Alignment;
  detail: string;
  strength: number;
}

const clamp01 = (x: number) => Math.max(0, Math.min(1, x));
const round3 = (x: number) => Math.round(x * 1000) / 1000;

function findConflict(requirement: string, a: Alignment, idf: Map<string, number>, reqQuantities: Quantity[], params: JudgeParams): Conflict | null {
  const sentence = a.unit.text;
  if (params.quantities && reqQuantities.length > 0) {
    const check = compareQuantities(reqQuantities, extractQuantities(sentence));
    if (check.conflict) {
      const { required, found } = check.conflict;
      return {
        kind: 'quantity',
        alignment: a,
        strength: 0.8,
        detail: `the requirement calls for "${collapse(required.text)}" but the document states "${collapse(found.text)}"`,
      };
    }
  }
  const req = requirementSign(requirement);
  const flips = params.antonyms ? antonymFlips(requirement, sentence) : [];
  const bothRestrict = isRestriction(requirement) && isRestriction(sentence);
  const scoped = scopedSign(sentence, idf);
  const clause = { cues: scoped.cues };
  const evSign = bothRestrict ? req.sign : scoped.sign;
  // A negated requirement needs an explicit permission/obligation in the sentence to be contradicted.
  const polarityMismatch = params.polarity && evSign !== req.sign && (bothRestrict || evSign === -1 || scoped.explicit);
  const total = (polarityMismatch ? 1 : 0) + flips.length;
  if (total % 2 === 1) {
    if (flips.length > 0 && !polarityMismatch) {
      const f = flips[0];
      return { kind: 'antonym', alignment: a, strength: 0.8, detail: `the requirement says "${f.required}" where the document says "${f.found}"` };
    }
    const detail =
      evSign === -1
        ? `the document negates or prohibits it (${clause.cues.map((c) => `"${c}"`).join(', ') || 'negation'})`
        : `the requirement is negated (${req.cues.map((c) => `"${c}"`).join(', ')}) while the document states it affirmatively`;
    return { kind: 'polarity', alignment: a, strength: evSign === -1 ? 0.5 : 0.4, detail };
  }
  return null;
}

/**
 * Judges one (atomic) requirement against retrieved passages with transparent heuristics; no model.
 *
 * 1. Alignment: every sentence of the passages is scored against the requirement (see `alignSentences`:
 *    IDF-weighted content-term coverage with BM25's IDF over the passages' sentences, passage coverage,
 *    bigram bonus, retrieval score).
 * 2. NOT_FOUND when the best sentence covers less than `notFoundCoverage` of the requirement's weighted
 *    terms: evidence null, and a recommendation naming the document that would settle it.
 * 3. Otherwise the best sentence (plus up to `candidates` − 1 close runners-up, and sentences that contain
 *    the requirement's distinctive subject with coverage ≥ `topicContradictionCoverage`, so that "smoking is
 *    allowed in designated areas" meets "Smoking is prohibited on site") is checked for a contradiction, in this order: conflicting
 *    quantities of the same dimension ("at least 42 inches" vs "39 inches", "within 24 hours" vs "within
 *    72 hours"); polarity: negation or prohibition in the requirement vs the sentence's clause that
 *    carries the requirement's terms ("must not"/"must", "prohibited"/"allowed", "never"/"always",
 *    "no"/"any", exceptions flip polarity, "only" ≡ "not … other than"), combined with antonym pairs
 *    ("closed"/"open", "before"/"after", "minimum"/"maximum", …) as further flips. A contradiction →
 *    CONTRADICTS with that sentence as evidence; none → COMPLIANT with the best sentence.
 * 4. Confidence grows with coverage, bigram match and margin over the threshold, and is lower for
 *    partial matches (< 0.7 = insufficient evidence); constants fitted on the labelled data in eval/.
 *
 * @param params constants (DEFAULT_JUDGE_PARAMS reproduces the judge as it was).
 * @param requirement one requirement (use `breakDownRequirement` first for compound ones).
 * @param passages retrieved chunks; may be empty (→ NOT_FOUND).
 * @returns the judgement; usage estimates the tokens a model would have read (requirement + passages) and
 *   written (explanation + recommendation). Never throws.
 */
export function judgeRequirementWith(requirement: string, passages: PassageInput[], params: JudgeParams): Judgement {
  const prompt = [requirement, ...passages.map((p) => p.text ?? '')];
  const finish = (j: Omit<Judgement, 'usage'>): Judgement => ({
    ...j,
    confidence: round3(j.confidence),
    usage: usageOf(prompt, [j.explanation, j.recommendation ?? ''].join('\n')),
  });
  const units = sentenceUnits(passages);
  const aligned = alignSentences(requirement, passages, units);
  const reqText = collapse(requirement);
  const best = aligned[0];
  const idf = idfWeights([...new Set(analyze(requirement))], units);
  const reqQuantities = extractQuantities(requirement);
  const k = Math.max(1, params.candidates);
  const candidates = best
    ? aligned.slice(0, k).filter((a, i) => i === 0 || (a.coverage >= params.notFoundCoverage && a.score >= params.candidateRatio * best.score))
    : [];
  if (best && best.coverage < params.notFoundCoverage) candidates.length = 0;
  // The subject must be distinctive (in at most a third of the sentences) for the topic rule to apply.
  const topic = topicTerms(requirement)?.filter((t) => units.filter((u) => u.terms.has(t)).length <= units.length / 3);
  if (topic && topic.length) {
    const onTopic = aligned.filter((a) => a.coverage >= params.topicContradictionCoverage && topic.every((t) => matchCredit(t, a.unit.terms) > 0));
    for (const a of onTopic.slice(0, k)) if (!candidates.includes(a)) candidates.push(a);
  }
  let conflict: Conflict | null = null;
  for (const a of candidates) {
    conflict = findConflict(requirement, a, idf, reqQuantities, params);
    if (conflict) break;
  }
  if (!best || (best.coverage < params.notFoundCoverage && !conflict)) {
    const cov = best?.coverage ?? 0;
    const explanation = !best
      ? noSentenceExplanation(passages.length)
      : `No passage addresses this requirement: the closest sentence, in ${where(makeQuote(best.unit.passage, best.unit.start, best.unit.end))}, ` +
        `covers only ${pct(cov)} of its key terms ("${collapse(best.unit.text).slice(0, 300)}").`;
    return finish({
      verdict: 'NOT_FOUND',
      confidence: 0.3 + 0.7 * clamp01(1 - cov / params.notFoundCoverage),
      evidence: null,
      explanation,
      recommendation: notFoundRecommendation(keywords(requirement), reqText),
    });
  }
  const second = aligned.find((a) => a.unit.passage !== best.unit.passage || a.unit.start !== best.unit.start);
  const margin = clamp01((best.coverage - params.notFoundCoverage) / (1 - params.notFoundCoverage || 1));
  if (conflict) {
    const a = conflict.alignment;
    const quote = makeQuote(a.unit.passage, a.unit.start, a.unit.end);
    const confidence = clamp01(0.25 + 0.2 * margin + 0.1 * a.bigram + 0.45 * conflict.strength * (a === best ? 1 : 0.8));
    return finish({
      verdict: 'CONTRADICTS',
      confidence,
      evidence: quote,
      explanation: `The requirement "${reqText}" is contradicted by ${where(quote)}: "${collapse(quote.quote)}" — ${conflict.detail}.`,
      recommendation: `Resolve the conflict: either change the documented practice in ${where(quote)} to meet "${reqText.slice(0, 300)}", or record why the requirement does not apply.`,
    });
  }
  const quote = makeQuote(best.unit.passage, best.unit.start, best.unit.end);
  const confidence = clamp01(0.45 + 0.35 * margin + 0.15 * best.bigram + 0.05 * (second ? clamp01((best.score - second.score) * 5) : 1));
  const missing = keywords(requirement, 20).filter((w) => !best.unit.terms.has(analyze(w)[0] ?? ''));
  const partial = missing.length ? ` Terms of the requirement not found in it: ${missing.slice(0, 6).join(', ')}.` : '';
  return finish({
    verdict: 'COMPLIANT',
    confidence,
    evidence: quote,
    explanation:
      `${where(quote)} states: "${collapse(quote.quote)}" This sentence covers ${pct(best.coverage)} of the requirement's key terms and nothing in it contradicts the requirement.` +
      partial +
      (confidence < 0.7 ? ' The match is partial, so the evidence may be insufficient.' : ''),
    recommendation: null,
  });
}

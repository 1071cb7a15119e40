import { CONFIDENT } from '@kb/text';

/**
 * Run-level corroboration of passing verdicts (docs/check.md "Confidence in a check run").
 *
 * A single verdict's confidence is capped below 0.7 when the judge cannot tell, from the one requirement and
 * its passages, a document that implements the obligation from one that merely talks about the same subject:
 * on the held-out frameworks of `npm run eval:controls` the embedded judge's P(COMPLIANT) is as high for
 * some requirements checked against unrelated construction documents as for requirements checked against
 * the procedures that implement them. A whole run tells them apart: a run checked against documents written
 * to implement its framework passes most of its requirements (84–95 % of the mapped ones on the fit frameworks, 82–92 %
 * of whole runs on the report frameworks), a run against unrelated documents almost none (0–17 %; 0–8 %). So once a run completes, when at least
 * {@link CORROBORATING_PASS_SHARE} of its (at least {@link CORROBORATION_MIN_REQUIREMENTS}) requirements pass,
 * each passing sub-requirement whose verdict no rule capped (Judgement.corroboration) shows the judge's calibrated
 * P(COMPLIANT) as its confidence when that is at least 0.7, with an explanation saying why; nothing else changes
 * (verdicts, pass/fail, failing confidences, capped verdicts).
 * Both constants were chosen on the `fit` frameworks (ISO/IEC 27001 and 27002) and checked on the `report`
 * frameworks, never on the held-out ones (docs/check.md gives the figures).
 */

/** Least share of a run's completed requirements that must pass for its passes to corroborate each other (fit split: 0.84–0.95 vs 0–0.17). */
export const CORROBORATING_PASS_SHARE = 0.3;

/** Fewest completed requirements for a run-level reading: below it a share says little (3 of 5 is not a library). */
export const CORROBORATION_MIN_REQUIREMENTS = 20;

/** A sub-requirement as corroboration reads it: the verdict, its single-verdict confidence and what corroboration may raise it to. */
export interface CorroborationSub {
  verdict: string | null;
  /** Confidence of the verdict on its own, 0 to 1. */
  judgeScore: number;
  /**
   * The judge's calibrated P(COMPLIANT), 0 to 1, when the verdict may be raised (Judgement.corroboration: an unsure
   * COMPLIANT of the requirement-satisfaction variant that no rule capped); null otherwise.
   */
  pCompliant: number | null;
}

/** A completed requirement of a run: whether it passed, and its sub-requirements. */
export interface CorroborationRequirement {
  passed: boolean;
  subs: CorroborationSub[];
}

/**
 * Whether a run's passes corroborate each other, and which sub-requirements it raises.
 *
 * @param requirements the run's completed requirements (pending ones are left out by the caller).
 * @returns `corroborated`, the `passShare` (passed / completed, 0 when none), `raised[i][j]` (sub-requirement j of
 *   requirement i is a COMPLIANT part of a passing requirement of a corroborated run with `pCompliant` ≥ 0.7 above its
 *   own confidence) and `scores[i][j]` (`pCompliant` where raised, else `judgeScore`). Pure; never throws.
 */
export function corroborateRun(requirements: CorroborationRequirement[]): {
  corroborated: boolean;
  passShare: number;
  raised: boolean[][];
  scores: number[][];
} {
  const n = requirements.length;
  const passShare = n ? requirements.filter((r) => r.passed).length / n : 0;
  const corroborated = n >= CORROBORATION_MIN_REQUIREMENTS && passShare >= CORROBORATING_PASS_SHARE;
  const raised = requirements.map((r) =>
    r.subs.map(
      (s) => corroborated && r.passed && s.verdict === 'COMPLIANT' && s.pCompliant !== null && s.pCompliant >= CONFIDENT && s.pCompliant > s.judgeScore,
    ),
  );
  const scores = requirements.map((r, i) => r.subs.map((s, j) => (raised[i][j] ? s.pCompliant! : s.judgeScore)));
  return { corroborated, passShare, raised, scores };
}

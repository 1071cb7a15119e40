import { CONFIDENT } from '@kb/text';

/**
 * Run-level reading of a completed check run (docs/check.md "The run-level reading").
 *
 * The judge reads one requirement and a few passages: it cannot tell a document written to implement the
 * obligation from one that merely talks about the same subject, so on real requirements its passes are unsure, and
 * some requirements pass narrowly against unrelated documents. A whole run tells the two apart: a run against the
 * documents that implement its framework passes most of its requirements (86–92 % of whole runs on the `fit`
 * frameworks of `npm run eval:controls`, 82–92 % on the `report` ones), a run against unrelated documents few
 * (13–15 %; 0–8 %). Once a run with at least {@link CORROBORATION_MIN_REQUIREMENTS} completed requirements completes:
 * - **corroborated** (at least {@link CORROBORATING_PASS_SHARE} pass): each unsure COMPLIANT sub-requirement of a
 *   passing requirement that no rule capped (Judgement.corroboratedExplanation) shows the judge's calibrated P(COMPLIANT) as its
 *   confidence when that is at least 0.7 (`raised`);
 * - **doubtful** (fewer than {@link DOUBTING_PASS_SHARE} pass): each unsure COMPLIANT sub-requirement of the embedded
 *   judge's requirement-satisfaction variant that would not have been raised (a rule capped it, or P(COMPLIANT) < 0.7) becomes NOT_FOUND with a
 *   confidence below 0.7 (`doubted`), and its requirement fails; confident passes stand;
 * - in between, and for smaller runs, the single verdicts stand.
 * Only verdicts of the embedded judge's requirement-satisfaction (`rsm`) variant are raised or doubted (`pCompliant`
 * is null for the others): the thresholds were measured with it, and its other variants pass far fewer requirements
 * of an implementing library (146 against 690 of the 1,000 of `bench:check`), so a real library could read as
 * doubtful and lose its few true passes. The pass share is the judge's own, before either change. The constants were chosen on the `fit` frameworks (ISO/IEC
 * 27001 and 27002) and checked on the `report` frameworks, never on the held-out ones (docs/check.md gives the figures).
 */

/** Least share of a run's completed requirements that must pass for its passes to corroborate each other (fit: whole runs 0.86–0.92 against the procedures, 0.13–0.15 against unrelated documents). */
export const CORROBORATING_PASS_SHARE = 0.3;

/** Below this share of passes a run's unsure passes are doubted (above the fit split's unrelated runs, 0.13–0.15, with a margin). */
export const DOUBTING_PASS_SHARE = 0.2;

/** Fewest completed requirements for a run-level reading: below it a share says little (3 of 5 is not a library). */
export const CORROBORATION_MIN_REQUIREMENTS = 20;

/** Highest confidence of a doubted verdict (below {@link CONFIDENT}: a doubted pass is never a confident failure). */
export const DOUBTED_CONFIDENCE_CAP = 0.69;

/** A sub-requirement as the run-level reading sees it: the judge's verdict, its confidence, P(COMPLIANT) and whether it may be raised. */
export interface CorroborationSub {
  verdict: string | null;
  /** Confidence of the verdict on its own, 0 to 1. */
  judgeScore: number;
  /** The embedded judge's calibrated P(COMPLIANT), 0 to 1, of its `rsm` variant; null for its other variants and a chat-model judge (never raised nor doubted). */
  pCompliant: number | null;
  /** True when no rule capped the verdict (Judgement.corroboratedExplanation is present): only then may it be raised. */
  raisable: boolean;
}

/** A completed requirement of a run: whether every sub-requirement's own verdict is COMPLIANT, and its sub-requirements. */
export interface CorroborationRequirement {
  passed: boolean;
  subs: CorroborationSub[];
}

/** What the run-level reading makes of one sub-requirement. */
export interface CorroboratedSub {
  verdict: string | null;
  score: number;
  /** `raised`: shown with P(COMPLIANT) as its confidence; `doubted`: turned NOT_FOUND; null: the single verdict stands. */
  change: 'raised' | 'doubted' | null;
}

/** The run-level reading of a completed run. */
export interface RunReadingResult {
  reading: 'corroborated' | 'doubtful' | 'none';
  /** Passed / completed by the single verdicts, 0 when none completed. */
  passShare: number;
  requirements: { passed: boolean; subs: CorroboratedSub[] }[];
}

/**
 * Reads a completed run (see the module comment).
 *
 * @param requirements the run's completed requirements (pending ones are left out by the caller), in order.
 * @returns the reading and, per requirement and sub-requirement, the verdict and score to show: raised to
 *   P(COMPLIANT) (corroborated run), or NOT_FOUND at `min(0.69, 1 − P(COMPLIANT))` (doubtful run), else unchanged.
 *   Pure; never throws.
 */
export function readRun(requirements: CorroborationRequirement[]): RunReadingResult {
  const n = requirements.length;
  const passShare = n ? requirements.filter((r) => r.passed).length / n : 0;
  const reading =
    n < CORROBORATION_MIN_REQUIREMENTS
      ? 'none'
      : passShare >= CORROBORATING_PASS_SHARE
        ? 'corroborated'
        : passShare < DOUBTING_PASS_SHARE
          ? 'doubtful'
          : 'none';
  const unsurePass = (s: CorroborationSub) => s.verdict === 'COMPLIANT' && s.judgeScore < CONFIDENT && s.pCompliant !== null;
  const raise = (s: CorroborationSub) => unsurePass(s) && s.raisable && s.pCompliant! >= CONFIDENT;
  return {
    reading,
    passShare,
    requirements: requirements.map((r) => {
      const subs = r.subs.map((s): CorroboratedSub => {
        if (r.passed && reading === 'corroborated' && raise(s)) return { verdict: s.verdict, score: s.pCompliant!, change: 'raised' };
        if (r.passed && reading === 'doubtful' && unsurePass(s) && !raise(s)) {
          return { verdict: 'NOT_FOUND', score: Math.min(DOUBTED_CONFIDENCE_CAP, 1 - s.pCompliant!), change: 'doubted' };
        }
        return { verdict: s.verdict, score: s.judgeScore, change: null };
      });
      return { passed: subs.length > 0 && subs.every((s) => s.verdict === 'COMPLIANT'), subs };
    }),
  };
}

/**
 * The justification of a doubted sub-requirement: why the run does not let the narrow match stand, then the single
 * verdict's own justification.
 * @param passed, total the run's passes and completed requirements by the single verdicts; @param pCompliant 0 to 1.
 */
export function doubtedJustification(judgeJustification: string, passed: number, total: number, pCompliant: number): string {
  return (
    `Not taken as met: only ${passed} of the run's ${total} requirements pass against these documents, so they are not written ` +
    `to implement these requirements, and this narrow match (${Math.round(pCompliant * 100)}% likely to meet it on its own) is ` +
    `not enough among them. Confirm it in the document or add one that states it. The passage as read: ${judgeJustification}`
  );
}

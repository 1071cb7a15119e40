import type { CheckRunDetail } from '@kb-platform/sdk';

/** `--fail-on` of `kb check`, `kb verify` and `kb runs wait`: what makes the command exit 5. */
export type FailOn = 'fail' | 'unsure';

/** The values `--fail-on` takes. */
export const FAIL_ON_CHOICES: readonly FailOn[] = ['fail', 'unsure'];

/**
 * Confidence below which a verdict's evidence is insufficient (service-api.md, verify `confidence`:
 * "below 0.7 suggests insufficient evidence"; decisions.md: "below 0.7 means the evidence is insufficient").
 */
export const LOW_CONFIDENCE = 0.7;

type Requirement = CheckRunDetail['requirements'][number];

/** The machine's pass/fail of a completed requirement (decisions.md: it passes when every sub-requirement complies); null when not completed. */
export function machinePasses(r: Pick<Requirement, 'status' | 'sub_requirements'>): boolean | null {
  if (r.status !== 'completed') return null;
  return r.sub_requirements.length > 0 && r.sub_requirements.every((s) => s.status === 'comply');
}

/**
 * Outcome of one requirement of a run for a CI gate:
 * - a person's current review (`review`, not `outdated`) decides: `pass` or `fail`, whatever the scores;
 * - else a requirement that is not `completed` (not checked, or its check failed) is `fail`: a gate
 *   must not pass on what was not checked;
 * - else the machine's result: `fail` when a sub-requirement does not comply, `unsure` when all
 *   comply but one's score is below {@link LOW_CONFIDENCE}, else `pass`.
 */
export function requirementOutcome(r: Pick<Requirement, 'status' | 'sub_requirements' | 'review'>): 'pass' | 'fail' | 'unsure' {
  if (r.review && !r.review.outdated) return r.review.decision === 'pass' ? 'pass' : 'fail';
  const passes = machinePasses(r);
  if (!passes) return 'fail';
  return r.sub_requirements.some((s) => s.score < LOW_CONFIDENCE) ? 'unsure' : 'pass';
}

/** What a gate found: counts, and whether it trips (exit 5). */
export interface GateResult {
  failed: number;
  unsure: number;
  total: number;
  tripped: boolean;
}

/** The gate over a run's requirements: `fail` trips on any failed requirement, `unsure` also on any unsure one. */
export function runGate(run: Pick<CheckRunDetail, 'requirements'>, failOn: FailOn): GateResult {
  const outcomes = run.requirements.map(requirementOutcome);
  const failed = outcomes.filter((o) => o === 'fail').length;
  const unsure = outcomes.filter((o) => o === 'unsure').length;
  return { failed, unsure, total: outcomes.length, tripped: failed > 0 || (failOn === 'unsure' && unsure > 0) };
}

/**
 * The gate over one verdict of `POST /check/verify`: `fail` trips unless the verdict is COMPLIANT
 * (CONTRADICTS and NOT_FOUND both fail), `unsure` also when its confidence is below {@link LOW_CONFIDENCE}.
 */
export function verdictGate(v: { verdict: string; confidence: number }, failOn: FailOn): GateResult {
  const failed = v.verdict !== 'COMPLIANT' ? 1 : 0;
  const unsure = !failed && v.confidence < LOW_CONFIDENCE ? 1 : 0;
  return { failed, unsure, total: 1, tripped: failed > 0 || (failOn === 'unsure' && unsure > 0) };
}

/** The line on stderr when a gate trips: `kb: requirements failed (--fail-on unsure): 1 of 3 fail, 1 unsure`. */
export function gateMessage(g: GateResult, failOn: FailOn): string {
  return `kb: requirements failed (--fail-on ${failOn}): ${g.failed} of ${g.total} fail${failOn === 'unsure' ? `, ${g.unsure} unsure` : ''}\n`;
}

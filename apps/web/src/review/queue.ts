/**
 * The review queue's rules (issue 31 item 5), kept free of React so they are unit-tested: a
 * requirement's machine result and score as the reports state them (apps/gateway/src/check/report.ts:
 * pass when completed and every sub-requirement complies, score = the lowest sub-requirement score),
 * the order for review (least confident first), the split of confident verdicts (score ≥ 0.7, the
 * API's own threshold: "below 0.7 suggests insufficient evidence") and the filters.
 */

/** The fields of a requirement the queue reads (a structural subset of the SDK's CheckRequirement). */
export interface QueueRequirement {
  id: string;
  order_index: number;
  status: string;
  sub_requirements: { score: number; status: string }[];
  review: { decision: 'pass' | 'fail'; outdated: boolean } | null;
}

/** Confidence at or above which a verdict counts as confident (service-api.md, single-requirement verdict). */
export const CONFIDENT = 0.7;

export type MachineResult = 'pass' | 'fail' | 'pending';

/** The machine's result: pending until completed; pass when every sub-requirement complies (and there is one). */
export function machineResult(r: QueueRequirement): MachineResult {
  if (r.status !== 'completed') return 'pending';
  return r.sub_requirements.length > 0 && r.sub_requirements.every((s) => s.status === 'comply') ? 'pass' : 'fail';
}

/** The lowest sub-requirement score, null without sub-requirements (or before completion). */
export function scoreOf(r: QueueRequirement): number | null {
  if (r.status !== 'completed' || r.sub_requirements.length === 0) return null;
  return Math.min(...r.sub_requirements.map((s) => s.score));
}

/** What counts for the run: a current (not outdated) review's decision, else the machine's result. */
export function effectiveResult(r: QueueRequirement): MachineResult {
  return r.review && !r.review.outdated ? r.review.decision : machineResult(r);
}

/** Filters of the queue: `result` compares {@link effectiveResult}. */
export interface QueueFilter {
  result: 'all' | 'pass' | 'fail';
  reviewed: 'all' | 'reviewed' | 'unreviewed';
  outdatedOnly: boolean;
}

export const NO_FILTER: QueueFilter = { result: 'all', reviewed: 'all', outdatedOnly: false };

/** Does a requirement pass the filter ("reviewed" means a current review; an outdated one counts as unreviewed). */
export function matches(r: QueueRequirement, f: QueueFilter): boolean {
  if (f.result !== 'all' && effectiveResult(r) !== f.result) return false;
  const current = r.review !== null && !r.review.outdated;
  if (f.reviewed === 'reviewed' && !current) return false;
  if (f.reviewed === 'unreviewed' && current) return false;
  if (f.outdatedOnly && !r.review?.outdated) return false;
  return true;
}

/**
 * The queue: requirements that pass the filter, split into `uncertain` (score below
 * {@link CONFIDENT}, lowest first; ties in run order) then `pending` (not yet checked, in run order),
 * and `confident` (score ≥ 0.7, lowest first), which the screen folds away.
 */
export function reviewQueue<T extends QueueRequirement>(
  requirements: readonly T[],
  filter: QueueFilter = NO_FILTER,
): { uncertain: T[]; pending: T[]; confident: T[] } {
  const shown = requirements.filter((r) => matches(r, filter));
  const byScore = (a: T, b: T) => (scoreOf(a) ?? 0) - (scoreOf(b) ?? 0) || a.order_index - b.order_index;
  return {
    uncertain: shown.filter((r) => scoreOf(r) !== null && scoreOf(r)! < CONFIDENT).sort(byScore),
    pending: shown.filter((r) => scoreOf(r) === null).sort((a, b) => a.order_index - b.order_index),
    confident: shown.filter((r) => scoreOf(r) !== null && scoreOf(r)! >= CONFIDENT).sort(byScore),
  };
}

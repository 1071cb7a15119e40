import { evidenceOf } from '@kb/events';
import { CONFIDENT } from '@kb/text';
import type { RequirementRow, StoredSource, SubRequirementRow } from './run-rows';

/** A requirement with its sub-requirements in order (what RunsRepository.listRequirements returns). */
export interface ComparedRequirement {
  requirement: Pick<RequirementRow, 'order_index' | 'text' | 'status' | 'passed'>;
  subs: Pick<SubRequirementRow, 'score' | 'justification' | 'sources'>[];
}

/** A requirement's machine outcome in one run (decisions.md "Re-running and comparing check runs"). */
export interface RequirementOutcome {
  /** The machine's result: `pass`/`fail` once completed, `pending` otherwise (reviews play no part). */
  result: 'pass' | 'fail' | 'pending';
  /** Lowest sub-requirement score (0..1), as reports use; null when it has no sub-requirement yet. */
  score: number | null;
  /** The quoted evidence of its sub-requirements, in order (a sub-requirement without a quote adds none). */
  evidence: string[];
  /** The sources of its sub-requirements in order, each chunk (`handbook_id` + `node_id`) once. */
  sources: StoredSource[];
}

/** One listed difference: `before` is the `id` run's outcome, `after` the `with` run's; null = not in that run. */
export interface RequirementChange {
  /** Position in the `id` run (in the `with` run for a requirement only there). */
  order_index: number;
  text: string;
  before: RequirementOutcome | null;
  after: RequirementOutcome | null;
}

/** `unchanged` + `changed` = matched pairs; `only_in_run` / `only_in_with` = unmatched requirements of either run. */
export interface ComparisonSummary {
  unchanged: number;
  changed: number;
  only_in_run: number;
  only_in_with: number;
}

export interface Comparison {
  summary: ComparisonSummary;
  changes: RequirementChange[];
}

/** Score from which a requirement is in the upper band (decisions.md "Check": below 0.7 = insufficient). */
export const SCORE_BAND = CONFIDENT;

/** The machine outcome of one requirement (see {@link RequirementOutcome}). */
export function outcomeOf({ requirement, subs }: ComparedRequirement): RequirementOutcome {
  const result = requirement.status !== 'completed' ? 'pending' : requirement.passed ? 'pass' : 'fail';
  const score = subs.length ? Math.min(...subs.map((s) => Number(s.score))) : null;
  const evidence = subs.map((s) => evidenceOf(s.justification)).filter((q): q is string => q !== null);
  const seen = new Set<string>();
  const sources: StoredSource[] = [];
  for (const s of subs)
    for (const src of s.sources ?? []) {
      const key = `${src.handbook_id}\u0000${src.node_id}`;
      if (seen.has(key)) continue;
      seen.add(key);
      sources.push(src);
    }
  return { result, score, evidence, sources };
}

const band = (score: number | null) => (score === null ? 'none' : score >= SCORE_BAND ? 'high' : 'low');

/**
 * Tells whether two document ids are versions of one document (the same chain of revisions);
 * the default knows only identity.
 */
export type SameDocument = (a: string, b: string) => boolean;

const sameId: SameDocument = (a, b) => a === b;

/**
 * The quote of the sub-requirement that gives an outcome its first source (whitespace collapsed),
 * null when that sub-requirement quotes nothing.
 */
function firstSourceQuote(subs: ComparedRequirement['subs']): string | null {
  const sub = subs.find((s) => (s.sources ?? []).length > 0);
  const quote = sub ? evidenceOf(sub.justification) : null;
  return quote === null ? null : quote.replace(/\s+/g, ' ').trim();
}

/**
 * Whether the first source moved: another chunk, unless it is the same quote in another version of
 * the same document (a revision re-chunks the document, so the chunk id changes while the evidence
 * stays; decisions.md "Re-running and comparing check runs" compares after a revision).
 */
function firstSourceMoved(before: ComparedRequirement, after: ComparedRequirement, a: RequirementOutcome, b: RequirementOutcome, same: SameDocument): boolean {
  const [x, y] = [a.sources[0], b.sources[0]];
  if (!x || !y) return Boolean(x) !== Boolean(y);
  if (x.handbook_id === y.handbook_id && x.node_id === y.node_id) return false;
  if (x.handbook_id === y.handbook_id || !same(x.handbook_id, y.handbook_id)) return true;
  const quote = firstSourceQuote(before.subs);
  return quote === null || quote !== firstSourceQuote(after.subs);
}

/**
 * Whether a matched pair differs in what a comparison reports: result, score band (below / at or
 * above 0.7) or first source (see firstSourceMoved: the same quote in a newer version of the same
 * document is not a move).
 */
export function outcomeChanged(before: ComparedRequirement, after: ComparedRequirement, same: SameDocument = sameId): boolean {
  const [a, b] = [outcomeOf(before), outcomeOf(after)];
  return a.result !== b.result || band(a.score) !== band(b.score) || firstSourceMoved(before, after, a, b, same);
}

/**
 * Compares two runs' requirements (decisions.md "Re-running and comparing check runs"). Requirements
 * are matched by exact text; among equal texts, in `order_index` order (the k-th occurrence in one run
 * with the k-th in the other). A matched pair is `changed` when {@link outcomeChanged}, else
 * `unchanged`. `same` tells versions of one document apart from different documents (see
 * {@link outcomeChanged}). `changes` lists every changed pair and every unmatched requirement (with `before` or
 * `after` null): first in the `run`'s order, then those only in `withRun` in its order.
 *
 * @param run the "before" run's requirements; @param withRun the "after" run's (any order: sorted here).
 */
export function compareRequirements(run: ComparedRequirement[], withRun: ComparedRequirement[], same: SameDocument = sameId): Comparison {
  const byOrder = (a: ComparedRequirement, b: ComparedRequirement) => a.requirement.order_index - b.requirement.order_index;
  const left = [...run].sort(byOrder);
  const right = [...withRun].sort(byOrder);
  const queues = new Map<string, ComparedRequirement[]>();
  for (const r of right) {
    const q = queues.get(r.requirement.text) ?? [];
    q.push(r);
    queues.set(r.requirement.text, q);
  }
  const matched = new Set<ComparedRequirement>();
  const summary: ComparisonSummary = { unchanged: 0, changed: 0, only_in_run: 0, only_in_with: 0 };
  const changes: RequirementChange[] = [];
  for (const l of left) {
    const r = queues.get(l.requirement.text)?.shift();
    const before = outcomeOf(l);
    if (!r) {
      summary.only_in_run++;
      changes.push({ order_index: l.requirement.order_index, text: l.requirement.text, before, after: null });
      continue;
    }
    matched.add(r);
    const after = outcomeOf(r);
    if (!outcomeChanged(l, r, same)) {
      summary.unchanged++;
      continue;
    }
    summary.changed++;
    changes.push({ order_index: l.requirement.order_index, text: l.requirement.text, before, after });
  }
  for (const r of right) {
    if (matched.has(r)) continue;
    summary.only_in_with++;
    changes.push({ order_index: r.requirement.order_index, text: r.requirement.text, before: null, after: outcomeOf(r) });
  }
  return { summary, changes };
}

import type { SubRequirementResult } from './runs.repository';

/**
 * A sub-requirement result for the run specs: a single verdict of a chat-model judge (no P(COMPLIANT), so the
 * run-level reading never changes it) unless `overrides` say otherwise. COMPLIANT at 0.9, anything else at 0.1.
 */
export function subResult(verdict: SubRequirementResult['verdict'], overrides: Partial<SubRequirementResult> = {}): SubRequirementResult {
  return {
    text: verdict === 'COMPLIANT' ? 'a' : 'b',
    justification: verdict === 'COMPLIANT' ? 'stated' : 'not found',
    score: verdict === 'COMPLIANT' ? 0.9 : 0.1,
    pCompliant: null,
    corroboratedJustification: null,
    verdict,
    sources: [],
    ...overrides,
  };
}

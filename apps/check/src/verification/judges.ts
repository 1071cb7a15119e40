import { breakDownRequirement, judgeRequirement, type Judgement, type PassageInput, type Usage } from '@kb/text';

/** Name reported for the embedded heuristic judge in usage records. */
export const EMBEDDED_JUDGE_MODEL = 'embedded-heuristic-judge';

/** One model (or heuristic) call's token usage, for quota records. */
export interface CallUsage {
  model: string;
  usage: Usage;
}

/**
 * The port through which check judges requirements and breaks them down: the embedded heuristic
 * judge of `@kb/text` when no chat model is configured, else a chat model (see model-judge.ts).
 */
export interface RequirementJudge {
  /** Name of the model reported in usage records. */
  readonly model: string;
  /**
   * Judges one atomic requirement against retrieved passages. The evidence of the returned judgement
   * is always a verbatim substring of one of `passages`.
   * @throws ModelProviderError when a configured model is unreachable after retries.
   */
  judge(requirement: string, passages: PassageInput[], signal?: AbortSignal): Promise<{ judgement: Judgement; calls: CallUsage[] }>;
  /**
   * Splits a compound requirement into atomic sub-requirements (at least one).
   * @throws ModelProviderError when a configured model is unreachable after retries.
   */
  breakDown(requirement: string, signal?: AbortSignal): Promise<{ parts: string[]; calls: CallUsage[] }>;
}

/** The embedded default: transparent heuristics, no model (libs/text/src/judge.ts, breakdown.ts). */
export class EmbeddedJudge implements RequirementJudge {
  readonly model = EMBEDDED_JUDGE_MODEL;

  async judge(requirement: string, passages: PassageInput[]) {
    const judgement = judgeRequirement(requirement, passages);
    return { judgement, calls: [{ model: this.model, usage: judgement.usage }] };
  }

  async breakDown(requirement: string) {
    return { parts: breakDownRequirement(requirement), calls: [] };
  }
}

import type { TokenUsage } from './types';

/** No tokens (a call that used none, or the start of a sum). */
export const NO_USAGE: TokenUsage = Object.freeze({ promptTokens: 0, completionTokens: 0, totalTokens: 0 });

/** Sum of two usages (e.g. a completion and its repair), field by field. */
export function addUsage(a: TokenUsage, b: TokenUsage): TokenUsage {
  return {
    promptTokens: a.promptTokens + b.promptTokens,
    completionTokens: a.completionTokens + b.completionTokens,
    totalTokens: a.totalTokens + b.totalTokens,
  };
}

/** Sum of any number of usages (e.g. every model call of one check or answer); {@link NO_USAGE} for none. */
export function sumUsage(usages: Iterable<TokenUsage>): TokenUsage {
  let total: TokenUsage = NO_USAGE;
  for (const u of usages) total = addUsage(total, u);
  return total;
}

/**
 * @kb/text — embedded (no-model) text intelligence: sentence splitting, term analysis, an extractive
 * answerer with citations and a heuristic compliance judge. Used when no chat model is configured;
 * every output is built from the retrieved text and says what it is.
 */
export type { PassageInput, Quote, Usage } from './types';
export { splitSentences, type SentenceSpan } from './sentences';
export { analyze } from './analyze';
export { pagesOfSpan } from './pages';
export { countTokens } from './tokens';
export { composeExtractiveAnswer, bestQuote, type ExtractiveAnswer, DEFAULT_MIN_RELEVANCE, NO_RELEVANT_INFORMATION } from './answer';
export { judgeRequirement, type Judgement, type Verdict } from './judge';
export { breakDownRequirement } from './breakdown';

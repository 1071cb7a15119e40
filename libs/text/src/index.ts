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
export { composeAnswer, composeExtractiveAnswer, bestQuote, type ExtractiveAnswer, NO_RELEVANT_INFORMATION } from './answer';
export { DEFAULT_JUDGE_PARAMS, judgeRequirementWith, type JudgeParams } from './heuristic-judge';
export {
  judgeRequirement,
  decideWithRules,
  CONFIDENT,
  VERBATIM_CONFIDENCE,
  type DecisionRule,
  type Judgement,
  type JudgeOptions,
  type JudgeVariant,
  type Verdict,
} from './judge';
export {
  semanticCandidates,
  statesVerbatim,
  unitKey,
  verdictSignals,
  rankEvidence,
  rsmSignals,
  evidenceOfReading,
  topHeading,
  SIGNAL_NAMES,
  NLI_SIGNAL_NAMES,
  NLI_CANDIDATES,
  RSM_SIGNAL_NAMES,
  RSM_CANDIDATES,
  MAX_SEMANTIC_SENTENCES,
  type RsmReading,
  type SemanticInput,
  type VerdictSignals,
} from './verdict-signals';
export { predictProba, decide, VERDICT_MODEL, VERDICT_CLASSES, type VerdictModel, type VerdictModelVariant } from './verdict-model';
export {
  assessAnswerability,
  answerType,
  answerTypeMatch,
  decideAnswerability,
  plattPredict,
  CONFIDENT_ANSWER,
  MIN_ANSWER_COVERAGE,
  linearDecision,
  questionSignals,
  questionContextSignals,
  sentenceSignals,
  ANSWERABILITY_MODEL,
  SENTENCE_FEATURES,
  QUESTION_FEATURES,
  type Answerability,
  type AnswerabilityParams,
  type EmbedTexts,
} from './answerability';
export { alignSentences, answerUnits, sentenceUnits, type SentenceUnit } from './align';
export { breakDownRequirement } from './breakdown';
export {
  joinTitle,
  readRequirement,
  requirementCore,
  requirementTitle,
  requirementWithTitle,
  withoutTitle,
  type RequirementReading,
} from './requirement-language';
export {
  evidenceUnits,
  isNonEvidence,
  rankUnits,
  sectionTitle,
  unitCandidates,
  unitModelText,
  MAX_UNIT_CHARS,
  MAX_UNIT_SENTENCES,
  type EvidenceUnit,
  type RankedUnit,
} from './evidence';
export { findVerbatim, resolveEvidence, type EvidenceResolution } from './align';
export { makeQuote } from './pages';
export { defaultNliModelDir, defaultRsmModelDir, NLI_MODEL_NAME, RSM_MODEL_NAME } from './nli-model';

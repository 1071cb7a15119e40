import { Logger } from '@kb/common';
import { chatModelFromEnv, type EmbeddingModel } from '@kb/models';
import { EmbeddedJudge, RequirementJudge } from './judges';
import { ModelJudge } from './model-judge';

/**
 * The judge this process uses: the configured chat model when `LLM_BASE_URL` is set (`@kb/models`,
 * see model-judge.ts; its verdicts are checked by the embedded judge), else the embedded judge.
 *
 * @param embeddings the service's sentence-embedding model (`openEmbeddingModel`), or null: the embedded
 *   judge then aligns evidence by words only (its lexical variant, calibrated for that case).
 * @throws Error naming the variable when the `LLM_*` configuration is invalid (fail fast at boot).
 */
export function createJudge(env: NodeJS.ProcessEnv, logger: Logger, embeddings: EmbeddingModel | null = null): RequirementJudge {
  const embedded = new EmbeddedJudge(embeddings, undefined, logger);
  const chat = chatModelFromEnv(env);
  if (!chat) {
    logger.info({ semantic: embedded.semantic }, 'no chat model configured (LLM_BASE_URL unset): using the embedded judge');
    return embedded;
  }
  logger.info({ model: chat.model }, 'judging with the configured chat model');
  return new ModelJudge(chat, embedded);
}

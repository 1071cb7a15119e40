import { Logger } from '@kb/common';
import { chatModelFromEnv } from '@kb/models';
import { EmbeddedJudge, RequirementJudge } from './judges';
import { ModelJudge } from './model-judge';

/**
 * The judge this process uses: the configured chat model when `LLM_BASE_URL` is set (`@kb/models`,
 * see model-judge.ts), else the embedded heuristic judge (no model).
 * @throws Error naming the variable when the `LLM_*` configuration is invalid (fail fast at boot).
 */
export function createJudge(env: NodeJS.ProcessEnv, logger: Logger): RequirementJudge {
  const chat = chatModelFromEnv(env);
  if (!chat) {
    logger.info('no chat model configured (LLM_BASE_URL unset): using the embedded heuristic judge');
    return new EmbeddedJudge();
  }
  logger.info({ model: chat.model }, 'judging with the configured chat model');
  return new ModelJudge(chat);
}

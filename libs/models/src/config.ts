import { loadConfig, sharedEnv } from '@kb/common';
import { OpenAiChatModel } from './openai-chat-model';
import type { ChatModel } from './types';

/**
 * The `LLM_*` variables (declared once in `sharedEnv.chatModel` of `@kb/common`, documented in the
 * README's configuration table). Services spread `...sharedEnv.chatModel` into their config schema.
 */
export const chatModelEnv = sharedEnv.chatModel;

/**
 * Builds the configured chat model, or returns null when `LLM_BASE_URL` is unset: the caller then
 * uses its embedded default (extractive answers, heuristic verdicts), which needs no model.
 *
 * @param env process environment (defaults to `process.env`).
 * @throws Error naming the variable when the configuration is invalid (e.g. `LLM_MODEL` missing
 *   while `LLM_BASE_URL` is set), so a service fails fast at boot.
 */
export function chatModelFromEnv(env: NodeJS.ProcessEnv = process.env): ChatModel | null {
  const config = loadConfig(chatModelEnv, env);
  if (!config.LLM_BASE_URL) return null;
  if (!config.LLM_MODEL) {
    throw new Error('Invalid configuration:\n  LLM_MODEL: required when LLM_BASE_URL is set (the model or Azure deployment name)');
  }
  return new OpenAiChatModel({
    baseUrl: config.LLM_BASE_URL,
    apiKey: config.LLM_API_KEY,
    model: config.LLM_MODEL,
    timeoutMs: config.LLM_TIMEOUT_MS,
    maxRetries: config.LLM_MAX_RETRIES,
    maxTokens: config.LLM_MAX_TOKENS,
    apiVersion: config.LLM_API_VERSION,
    responseFormat: config.LLM_RESPONSE_FORMAT,
  });
}

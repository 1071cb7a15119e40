import { loadConfig, sharedEnv } from '@kb/common';
import type { z } from 'zod';
import { OpenAiChatModel } from './openai-chat-model';
import type { ChatModel } from './types';

/**
 * The `LLM_*` variables (declared once in `sharedEnv.chatModel` of `@kb/common`, documented in the
 * README's configuration table). Services spread `...sharedEnv.chatModel` into their config schema.
 */
export const chatModelEnv = sharedEnv.chatModel;

/** The parsed `LLM_*` settings: the fields of {@link chatModelEnv} in a service's validated config. */
export type ChatModelConfig = z.infer<z.ZodObject<typeof chatModelEnv>>;

/**
 * Builds the configured chat model from a service's validated config (its schema spreads
 * {@link chatModelEnv}), or returns null when `LLM_BASE_URL` is unset: the caller then uses its
 * embedded default (extractive answers, heuristic verdicts), which needs no model.
 *
 * @throws Error naming the variable when `LLM_MODEL` is missing while `LLM_BASE_URL` is set, so a
 *   service fails fast at boot.
 */
export function chatModelFromConfig(config: ChatModelConfig): ChatModel | null {
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

/**
 * {@link chatModelFromConfig} over a raw environment, parsed with {@link chatModelEnv}: for tools
 * and tests that have no service config (services pass their validated config instead).
 *
 * @param env process environment (defaults to `process.env`).
 * @throws Error naming the variable when the configuration is invalid (e.g. `LLM_MODEL` missing
 *   while `LLM_BASE_URL` is set, `LLM_BASE_URL` not a URL).
 */
export function chatModelFromEnv(env: NodeJS.ProcessEnv = process.env): ChatModel | null {
  return chatModelFromConfig(loadConfig(chatModelEnv, env));
}

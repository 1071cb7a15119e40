import type { ZodType } from 'zod';
import { ModelProviderError } from './errors';
import type { ChatModel, ChatResult } from './types';

/** One structured model step: a system instruction, one user message, and the JSON Schema the answer must follow. */
export interface StructuredStep {
  /** Name of the response schema (`response_format.json_schema.name`), e.g. `compliance_verdict`. */
  name: string;
  system: string;
  user: string;
  /** JSON Schema of the answer (what `schema` below parses). */
  jsonSchema: Record<string, unknown>;
  /** Completion token limit; the model's `LLM_MAX_TOKENS` when absent. */
  maxTokens?: number;
  /** Sampling temperature; the client's default (0) when absent. */
  temperature?: number;
}

/**
 * Runs a {@link StructuredStep} through `model.completeJson` (which retries the provider and repairs an
 * unreadable answer once). The check's judge and breakdown and the agent's routing and query rewrite all go
 * through here, so each decides in one place what an unusable answer means for it.
 * @returns `{ value, result }`: the answer parsed by `schema` and the call's result (model, usage); or
 *   `{ unusable }`: the answer stayed unreadable after the repair (a {@link ModelProviderError} with code
 *   `invalid_output`, whose `usage` still counts against the organization's tokens).
 * @throws any other error of the call (provider failure after retries, abort).
 */
export async function completeStep<T>(
  model: ChatModel,
  step: StructuredStep,
  schema: ZodType<T>,
  signal?: AbortSignal,
): Promise<{ value: T; result: ChatResult } | { unusable: ModelProviderError }> {
  try {
    return await model.completeJson(
      {
        messages: [
          { role: 'system', content: step.system },
          { role: 'user', content: step.user },
        ],
        responseSchema: { name: step.name, schema: step.jsonSchema },
        ...(step.maxTokens !== undefined ? { maxTokens: step.maxTokens } : {}),
        ...(step.temperature !== undefined ? { temperature: step.temperature } : {}),
        signal,
      },
      schema,
    );
  } catch (err) {
    if (err instanceof ModelProviderError && err.code === 'invalid_output') return { unusable: err };
    throw err;
  }
}

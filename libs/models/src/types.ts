import type { ZodType } from 'zod';

/** One message of a chat-completion conversation (OpenAI chat format). */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/** Model tokens of one call, as reported by the provider (or estimated when it reports none). */
export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

/** One chat-completion request. */
export interface ChatRequest {
  messages: ChatMessage[];
  /**
   * Structured output: the model must answer with one JSON object valid against this JSON Schema
   * (sent as `response_format`, see `LLM_RESPONSE_FORMAT`).
   */
  responseSchema?: { name: string; schema: Record<string, unknown> };
  /** Completion token limit; defaults to `LLM_MAX_TOKENS`. */
  maxTokens?: number;
  /** Sampling temperature; defaults to 0 (verdicts and answers should be reproducible). */
  temperature?: number;
  /** Aborts the HTTP call (client disconnected, run stopped). The call then rejects with an AbortError. */
  signal?: AbortSignal;
}

/** The result of one completion. */
export interface ChatResult {
  content: string;
  usage: TokenUsage;
  /** Provider's finish reason (`stop`, `length`, …). */
  finishReason: string;
  /** Model name reported to clients. */
  model: string;
}

/** Events of a streamed completion: any number of deltas, then exactly one `done`. */
export type ChatStreamEvent = { type: 'delta'; content: string } | { type: 'done'; usage: TokenUsage; finishReason: string; model: string };

/**
 * A configured chat model. The one adapter is {@link OpenAiChatModel} (the OpenAI chat-completions
 * HTTP API, spoken by OpenAI, Azure OpenAI, vLLM, Ollama, llama.cpp server and LM Studio); when no
 * model is configured callers use their embedded defaults instead (`chatModelFromEnv` → null).
 */
export interface ChatModel {
  /** Model name reported to clients in `model`. */
  readonly model: string;
  /**
   * One completion. Retries 408/409/429/5xx and connection errors with exponential backoff
   * (honouring `Retry-After`), each attempt bounded by `LLM_TIMEOUT_MS`.
   * @throws ModelProviderError when the provider still fails; AbortError-like error when `signal` aborts.
   */
  complete(request: ChatRequest): Promise<ChatResult>;
  /**
   * Structured completion: parses `content` as JSON (a surrounding Markdown code fence is tolerated)
   * and validates it with `schema`; on invalid output asks the model once to repair it.
   * `result.usage` sums both calls.
   * @throws ModelProviderError (`code` `invalid_output`) when the repaired output is still invalid.
   */
  completeJson<T>(request: ChatRequest, schema: ZodType<T>): Promise<{ value: T; result: ChatResult }>;
  /** Streamed completion: deltas, then exactly one `done` carrying the usage. Same retries as `complete` until the first byte. */
  stream(request: ChatRequest): AsyncIterable<ChatStreamEvent>;
}

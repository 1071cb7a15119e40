import OpenAI, { AzureOpenAI } from 'openai';
import { providerErrorOf } from './openai-errors';
import type { ZodType } from 'zod';
import { ModelProviderError } from './errors';
import { addUsage } from './usage';
import type { ChatMessage, ChatModel, ChatRequest, ChatResult, ChatStreamEvent, TokenUsage } from './types';

/** How structured output is requested: OpenAI `json_schema`, the older `json_object`, or only by the prompt. */
export type ResponseFormatMode = 'json_schema' | 'json_object' | 'none';

/** Settings of {@link OpenAiChatModel} (from the `LLM_*` variables, see `chatModelFromEnv`). */
export interface OpenAiChatModelOptions {
  /** Base URL of the OpenAI-compatible API, e.g. `https://api.openai.com/v1`, `http://localhost:11434/v1`. For Azure: the resource endpoint. */
  baseUrl: string;
  /** Bearer key; servers without auth (Ollama, vLLM, llama.cpp) accept any value. */
  apiKey?: string;
  /** Model name (Azure: the deployment name). */
  model: string;
  /** Per-attempt timeout in ms. */
  timeoutMs: number;
  /** Retries after the first attempt on 408/409/429/5xx/network errors (exponential backoff with jitter, `Retry-After` honoured). */
  maxRetries: number;
  /** Default completion token limit. */
  maxTokens: number;
  /** Azure OpenAI `api-version`; when set the Azure client (deployment-scoped URLs, `api-key` header) is used. */
  apiVersion?: string;
  responseFormat: ResponseFormatMode;
}

/**
 * Chat model over the OpenAI chat-completions API through the official `openai` client, which
 * provides the retries with backoff and the timeouts. Works with OpenAI, Azure OpenAI (set
 * `apiVersion`), vLLM, Ollama, llama.cpp server and LM Studio.
 *
 * Token usage is the provider's `usage`; servers that report none get an estimate of one token
 * per 4 characters (OpenAI's published rule of thumb for English text), so quotas still count.
 */
export class OpenAiChatModel implements ChatModel {
  readonly model: string;
  private readonly client: OpenAI;

  constructor(private readonly options: OpenAiChatModelOptions) {
    this.model = options.model;
    const common = { apiKey: options.apiKey || 'unused', timeout: options.timeoutMs, maxRetries: options.maxRetries };
    this.client = options.apiVersion
      ? new AzureOpenAI({ ...common, endpoint: options.baseUrl, apiVersion: options.apiVersion, deployment: options.model })
      : new OpenAI({ ...common, baseURL: options.baseUrl });
  }

  /** @inheritdoc */
  async complete(request: ChatRequest): Promise<ChatResult> {
    try {
      const response = await this.client.chat.completions.create(
        {
          model: this.model,
          messages: request.messages,
          temperature: request.temperature ?? 0,
          max_tokens: request.maxTokens ?? this.options.maxTokens,
          ...this.responseFormat(request),
        },
        { signal: request.signal },
      );
      const choice = response.choices[0];
      const content = choice?.message?.content ?? '';
      return {
        content,
        finishReason: choice?.finish_reason ?? 'stop',
        model: this.model,
        usage: toUsage(response.usage, request.messages, content),
      };
    } catch (error) {
      throw providerErrorOf(error, 'model provider');
    }
  }

  /** @inheritdoc */
  async completeJson<T>(request: ChatRequest, schema: ZodType<T>): Promise<{ value: T; result: ChatResult }> {
    const first = await this.complete(request);
    const parsed = parseJson(first.content, schema);
    if (parsed.ok) return { value: parsed.value, result: first };
    const repair: ChatMessage[] = [
      ...request.messages,
      { role: 'assistant', content: first.content },
      {
        role: 'user',
        content: `Your reply is not valid: ${parsed.problem}. Reply again with only the JSON object${request.responseSchema ? ` matching the schema "${request.responseSchema.name}"` : ''}, no other text.`,
      },
    ];
    const second = await this.complete({ ...request, messages: repair });
    const usage = addUsage(first.usage, second.usage);
    const reparsed = parseJson(second.content, schema);
    if (!reparsed.ok) {
      throw new ModelProviderError(`The model's structured output stayed invalid after one repair: ${reparsed.problem}`, false, null, 'invalid_output', usage);
    }
    return { value: reparsed.value, result: { ...second, usage } };
  }

  /** @inheritdoc */
  async *stream(request: ChatRequest): AsyncIterable<ChatStreamEvent> {
    let stream;
    try {
      stream = await this.client.chat.completions.create(
        {
          model: this.model,
          messages: request.messages,
          temperature: request.temperature ?? 0,
          max_tokens: request.maxTokens ?? this.options.maxTokens,
          stream: true,
          stream_options: { include_usage: true },
        },
        { signal: request.signal },
      );
    } catch (error) {
      throw providerErrorOf(error, 'model provider');
    }
    let text = '';
    let finishReason = 'stop';
    let reported: OpenAI.CompletionUsage | undefined;
    try {
      for await (const chunk of stream) {
        if (chunk.usage) reported = chunk.usage;
        const choice = chunk.choices?.[0];
        if (choice?.finish_reason) finishReason = choice.finish_reason;
        const delta = choice?.delta?.content;
        if (delta) {
          text += delta;
          yield { type: 'delta', content: delta };
        }
      }
    } catch (error) {
      throw providerErrorOf(error, 'model provider');
    }
    yield { type: 'done', usage: toUsage(reported, request.messages, text), finishReason, model: this.model };
  }

  private responseFormat(request: ChatRequest): Pick<OpenAI.ChatCompletionCreateParamsNonStreaming, 'response_format'> {
    if (!request.responseSchema || this.options.responseFormat === 'none') return {};
    if (this.options.responseFormat === 'json_object') return { response_format: { type: 'json_object' } };
    return {
      response_format: {
        type: 'json_schema',
        json_schema: { name: request.responseSchema.name, schema: request.responseSchema.schema, strict: false },
      },
    };
  }
}

/** Parses a model's JSON answer, tolerating a Markdown code fence around it, and validates it. */
function parseJson<T>(content: string, schema: ZodType<T>): { ok: true; value: T } | { ok: false; problem: string } {
  const fenced = /```(?:json)?\s*([\s\S]*?)```/i.exec(content);
  const text = (fenced ? fenced[1] : content).trim();
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { ok: false, problem: 'it is not a JSON object' };
  }
  const result = schema.safeParse(raw);
  if (result.success) return { ok: true, value: result.data };
  const issues = result.error.issues.slice(0, 5).map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
  return { ok: false, problem: issues.join('; ') };
}

/** Provider usage, or the 4-characters-per-token estimate when the server reports none. */
function toUsage(usage: OpenAI.CompletionUsage | undefined | null, messages: ChatMessage[], completion: string): TokenUsage {
  if (usage && Number.isFinite(usage.prompt_tokens)) {
    const promptTokens = usage.prompt_tokens;
    const completionTokens = usage.completion_tokens ?? 0;
    return { promptTokens, completionTokens, totalTokens: usage.total_tokens ?? promptTokens + completionTokens };
  }
  const promptTokens = estimateTokens(messages.map((m) => m.content).join('\n'));
  const completionTokens = estimateTokens(completion);
  return { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens };
}

/** Rough token count: ceil(characters / 4), OpenAI's rule of thumb for English. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

import { z } from 'zod';
import { chatModelFromEnv, ModelProviderError, OpenAiChatModel, type ChatStreamEvent } from './index';
import { startScriptedOpenAiServer, type ScriptedOpenAiServer, type ScriptedReply } from './testing/scripted-openai-server';

const options = { model: 'scripted-model', timeoutMs: 5_000, maxRetries: 2, maxTokens: 256, responseFormat: 'json_schema' as const };
const user = (content: string) => [{ role: 'user' as const, content }];

describe('OpenAiChatModel against a server speaking the OpenAI protocol', () => {
  let server: ScriptedOpenAiServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });
  const serve = async (respond: (body: unknown, call: number) => ScriptedReply) => {
    server = await startScriptedOpenAiServer(respond);
    return new OpenAiChatModel({ ...options, baseUrl: server.baseUrl });
  };

  it('returns the content, the finish reason and the provider-reported usage', async () => {
    const model = await serve(() => ({ content: 'Fall protection starts at 6 feet.', usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 } }));
    const result = await model.complete({ messages: user('When is fall protection required?') });
    expect(result).toEqual({
      content: 'Fall protection starts at 6 feet.',
      finishReason: 'stop',
      model: 'scripted-model',
      usage: { promptTokens: 11, completionTokens: 7, totalTokens: 18 },
    });
    expect(server!.requests[0]).toMatchObject({ model: 'scripted-model', temperature: 0, max_tokens: 256 });
  });

  it('estimates usage at 4 characters per token when the server reports none', async () => {
    const model = await serve(() => ({ content: 'x'.repeat(40), usage: null }));
    const result = await model.complete({ messages: user('y'.repeat(80)) });
    expect(result.usage).toEqual({ promptTokens: 20, completionTokens: 10, totalTokens: 30 });
  });

  it('retries 429 and 503 answers, then succeeds', async () => {
    const model = await serve((_b, call) => (call < 2 ? { status: call === 0 ? 429 : 503 } : { content: 'ok' }));
    const result = await model.complete({ messages: user('hi') });
    expect(result.content).toBe('ok');
    expect(server!.requests).toHaveLength(3);
  });

  it('gives up after the configured retries with a retryable ModelProviderError', async () => {
    const model = await serve(() => ({ status: 500 }));
    const failure = await model.complete({ messages: user('hi') }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(ModelProviderError);
    expect(failure).toMatchObject({ retryable: true, status: 500, code: 'http' });
    expect(server!.requests).toHaveLength(1 + options.maxRetries);
  });

  it('does not retry a 400 answer', async () => {
    const model = await serve(() => ({ status: 400 }));
    await expect(model.complete({ messages: user('hi') })).rejects.toMatchObject({ retryable: false, status: 400 });
    expect(server!.requests).toHaveLength(1);
  });

  it('sends the JSON schema as response_format and validates the structured answer', async () => {
    const model = await serve(() => ({ content: '```json\n{"verdict":"COMPLIANT","confidence":0.9}\n```' }));
    const schema = z.object({ verdict: z.enum(['COMPLIANT', 'CONTRADICTS', 'NOT_FOUND']), confidence: z.number() });
    const { value } = await model.completeJson({ messages: user('judge'), responseSchema: { name: 'verdict', schema: { type: 'object' } } }, schema);
    expect(value).toEqual({ verdict: 'COMPLIANT', confidence: 0.9 });
    expect(server!.requests[0].response_format).toEqual({ type: 'json_schema', json_schema: { name: 'verdict', schema: { type: 'object' }, strict: false } });
  });

  it('asks once for a repair of invalid structured output and sums the usage of both calls', async () => {
    const model = await serve((_b, call) =>
      call === 0
        ? { content: 'The verdict is compliant.', usage: { prompt_tokens: 5, completion_tokens: 4, total_tokens: 9 } }
        : { content: '{"verdict":"NOT_FOUND"}', usage: { prompt_tokens: 12, completion_tokens: 3, total_tokens: 15 } },
    );
    const { value, result } = await model.completeJson({ messages: user('judge') }, z.object({ verdict: z.string() }));
    expect(value).toEqual({ verdict: 'NOT_FOUND' });
    expect(result.usage).toEqual({ promptTokens: 17, completionTokens: 7, totalTokens: 24 });
    const repairTurn = server!.requests[1].messages.at(-1)!;
    expect(repairTurn.role).toBe('user');
    expect(repairTurn.content).toMatch(/not valid/);
  });

  it('fails with invalid_output when the repaired answer is still invalid', async () => {
    const model = await serve(() => ({ content: 'no json here' }));
    await expect(model.completeJson({ messages: user('judge') }, z.object({ verdict: z.string() }))).rejects.toMatchObject({
      code: 'invalid_output',
    });
    expect(server!.requests).toHaveLength(2);
  });

  it('streams deltas in order and ends with one done event carrying the usage', async () => {
    const model = await serve(() => ({ content: 'Wear a hard hat on site.', usage: { prompt_tokens: 3, completion_tokens: 6, total_tokens: 9 } }));
    const events: ChatStreamEvent[] = [];
    for await (const event of model.stream({ messages: user('PPE?') })) events.push(event);
    const deltas = events.filter((e) => e.type === 'delta').map((e) => (e as { content: string }).content);
    expect(deltas.join('')).toBe('Wear a hard hat on site.');
    expect(deltas.length).toBeGreaterThan(1);
    expect(events.at(-1)).toEqual({
      type: 'done',
      usage: { promptTokens: 3, completionTokens: 6, totalTokens: 9 },
      finishReason: 'stop',
      model: 'scripted-model',
    });
    expect(server!.requests[0].stream_options).toEqual({ include_usage: true });
  });

  it('aborts an in-flight call when the signal fires, without retrying', async () => {
    const model = await serve(() => ({ content: 'late', delayMs: 2_000 }));
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const started = Date.now();
    const failure = await model.complete({ messages: user('hi'), signal: controller.signal }).catch((e: unknown) => e);
    expect(failure).not.toBeInstanceOf(ModelProviderError);
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(server!.requests).toHaveLength(1);
  });
});

describe('chatModelFromEnv', () => {
  it('returns null without LLM_BASE_URL: callers use their embedded defaults', () => {
    expect(chatModelFromEnv({})).toBeNull();
  });

  it('builds the adapter from the LLM_* variables', () => {
    const model = chatModelFromEnv({ LLM_BASE_URL: 'http://127.0.0.1:1/v1', LLM_MODEL: 'llama3.1:8b' });
    expect(model).toBeInstanceOf(OpenAiChatModel);
    expect(model!.model).toBe('llama3.1:8b');
  });

  it('fails fast, naming the variable, when LLM_MODEL is missing or the URL is malformed', () => {
    expect(() => chatModelFromEnv({ LLM_BASE_URL: 'http://127.0.0.1:1/v1' })).toThrow(/LLM_MODEL/);
    expect(() => chatModelFromEnv({ LLM_BASE_URL: 'not a url', LLM_MODEL: 'm' })).toThrow(/LLM_BASE_URL/);
  });
});

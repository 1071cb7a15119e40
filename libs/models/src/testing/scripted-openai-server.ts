import { sendScriptedError, startScriptedHttpServer } from './scripted-http';
import type { ChatMessage } from '../types';

/** The parts of a chat-completions request body a script looks at. */
export interface ScriptedRequestBody {
  model: string;
  messages: ChatMessage[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  response_format?: unknown;
  max_tokens?: number;
  temperature?: number;
}

/**
 * What the script answers: `content` as the assistant message, or an HTTP error `status`
 * (e.g. 429 or 503 to exercise retries). `delayMs` delays the answer (timeouts, slow streams);
 * `chunks` splits a streamed answer (defaults to words).
 */
export interface ScriptedReply {
  content?: string;
  status?: number;
  delayMs?: number;
  chunks?: string[];
  /** Usage to report; omitted → computed as 1 token per word; `null` → no usage field at all. */
  usage?: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null;
}

/** A running scripted server. */
export interface ScriptedOpenAiServer {
  /** Base URL to configure as `LLM_BASE_URL`, ending in `/v1`. */
  baseUrl: string;
  /** Every request body received, in order. */
  requests: ScriptedRequestBody[];
  close(): Promise<void>;
}

/**
 * A real HTTP server speaking the OpenAI chat-completions protocol (JSON and SSE streaming with a
 * final usage chunk), answering from a script. For tests of the "model configured" paths: no
 * model can run on the test machines, the protocol and the HTTP client are exercised for real.
 * Only `POST …/chat/completions` is served; anything else answers 404.
 */
export async function startScriptedOpenAiServer(
  respond: (body: ScriptedRequestBody, callIndex: number) => ScriptedReply | Promise<ScriptedReply>,
): Promise<ScriptedOpenAiServer> {
  const requests: ScriptedRequestBody[] = [];
  const server = await startScriptedHttpServer('/chat/completions', async (parsed, res) => {
    const body = parsed as ScriptedRequestBody;
    requests.push(body);
    const reply = await respond(body, requests.length - 1);
    if (reply.delayMs) await new Promise((r) => setTimeout(r, reply.delayMs).unref());
    if (res.destroyed) return;
    if (reply.status && reply.status >= 400) return sendScriptedError(res, reply.status);
    const content = reply.content ?? '';
    const words = (s: string) => s.split(/\s+/).filter(Boolean).length;
    const usage =
      reply.usage === undefined
        ? (() => {
            const prompt = body.messages.reduce((n, m) => n + words(m.content), 0);
            const completion = words(content);
            return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
          })()
        : reply.usage;
    const base = { id: `chatcmpl-${requests.length}`, created: Math.floor(Date.now() / 1000), model: body.model };
    if (!body.stream) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          ...base,
          object: 'chat.completion',
          choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
          ...(usage ? { usage } : {}),
        }),
      );
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const chunks = reply.chunks ?? content.match(/\S+\s*/g) ?? [];
    const send = (payload: unknown) => res.write(`data: ${JSON.stringify(payload)}\n\n`);
    for (const piece of chunks) {
      if (res.destroyed) return;
      send({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: piece }, finish_reason: null }] });
    }
    send({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
    if (usage && body.stream_options?.include_usage) send({ ...base, object: 'chat.completion.chunk', choices: [], usage });
    res.end('data: [DONE]\n\n');
  });
  return { ...server, requests };
}

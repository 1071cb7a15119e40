#!/usr/bin/env node
// Test tooling, not part of the product: a small OpenAI-compatible chat-completions server over
// node-llama-cpp (llama.cpp bindings, prebuilt CPU binaries from npm) running one GGUF model, so
// the tests can drive the product's model-provider path (`LLM_BASE_URL`) against a real model.
// node-llama-cpp ships no HTTP server of its own; this file is the smallest faithful subset of the
// OpenAI API the product uses. See README.md beside this file.
//
//   node tools/llm-server/server.mjs --model <file.gguf> [--port 0] [--host 127.0.0.1]
//        [--name SmolLM2-135M-Instruct] [--threads N] [--context-size 8192] [--api-key KEY]
//
// Prints one line `READY {"baseUrl": "...", "model": "..."}` on stdout once it listens; SIGTERM
// or SIGINT stops it.
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { getLlama, LlamaChat } from 'node-llama-cpp';

/** Largest request body accepted (bytes); larger → 413 in OpenAI's error format. */
const MAX_BODY_BYTES = 4 * 1024 * 1024;
/** Grammars compiled from `response_format` schemas, kept by schema text (compiling costs ~10 ms). */
const GRAMMAR_CACHE_SIZE = 32;

/**
 * An OpenAI error: `status` with `{"error": {message, type, param, code}}`, as
 * https://platform.openai.com/docs/guides/error-codes describes.
 */
class ApiError extends Error {
  constructor(status, message, { type = 'invalid_request_error', param = null, code = null } = {}) {
    super(message);
    this.status = status;
    this.type = type;
    this.param = param;
    this.code = code;
  }
}

/** Runs `fn` when one of `size` slots is free (FIFO); one slot per context sequence. */
class Slots {
  constructor(items) {
    this.free = [...items];
    this.waiting = [];
  }
  async use(fn) {
    const item = this.free.pop() ?? (await new Promise((resolve) => this.waiting.push(resolve)));
    try {
      return await fn(item);
    } finally {
      const next = this.waiting.shift();
      if (next) next(item);
      else this.free.push(item);
    }
  }
}

/**
 * Loads the model and starts the HTTP server.
 * @param {object} o
 * @param {string} o.modelPath the GGUF file
 * @param {string} [o.modelName] the id served in `/v1/models` and required in requests' `model` (default: the file name without `.gguf`)
 * @param {string} [o.host] default 127.0.0.1
 * @param {number} [o.port] default 0 (a free port)
 * @param {number} [o.threads] CPU threads for evaluation (default: cores − 1, at least 1; llama.cpp's
 *   spinning worker threads slow everything down on a busy machine when given every core)
 * @param {number} [o.contextSize] tokens per sequence (default 8192, the model's training context; the prompt plus `max_tokens` must fit)
 * @param {number} [o.parallel] requests evaluated at once, one context sequence each (default 1)
 * @param {string} [o.apiKey] when set, requests need `Authorization: Bearer <apiKey>` (else 401)
 * @returns {Promise<{baseUrl: string, model: string, close: () => Promise<void>}>}
 */
export async function startLlmServer(o) {
  const modelName = o.modelName ?? path.basename(o.modelPath).replace(/\.gguf$/i, '');
  const threads = o.threads ?? Math.max(1, (os.availableParallelism?.() ?? os.cpus().length) - 1);
  const parallel = o.parallel ?? 1;
  const llama = await getLlama({ gpu: false, build: 'never', maxThreads: threads, logLevel: 'error' });
  const model = await llama.loadModel({ modelPath: o.modelPath });
  const context = await model.createContext({ contextSize: o.contextSize ?? 8192, sequences: parallel, threads });
  const chats = Array.from({ length: parallel }, () => new LlamaChat({ contextSequence: context.getSequence(), autoDisposeSequence: false }));
  const slots = new Slots(chats);
  const grammars = new Map();
  const created = Math.floor(Date.now() / 1000);

  async function grammarFor(format) {
    if (format == null || format.type === 'text') return undefined;
    if (format.type === 'json_object') return cached('json', () => llama.getGrammarFor('json'));
    if (format.type === 'json_schema') {
      const schema = format.json_schema?.schema;
      if (!schema || typeof schema !== 'object') throw new ApiError(400, "Missing 'response_format.json_schema.schema'.", { param: 'response_format' });
      return cached(JSON.stringify(schema), async () => {
        try {
          return await llama.createGrammarForJsonSchema(schema);
        } catch (e) {
          throw new ApiError(400, `Invalid schema for response_format '${format.json_schema.name ?? ''}': ${e.message}`, { param: 'response_format' });
        }
      });
    }
    throw new ApiError(400, `Invalid value for 'response_format.type': '${format.type}'. Supported: 'text', 'json_object', 'json_schema'.`, {
      param: 'response_format',
    });
  }

  async function cached(key, make) {
    if (grammars.has(key)) return grammars.get(key);
    const grammar = await make();
    if (grammars.size >= GRAMMAR_CACHE_SIZE) grammars.delete(grammars.keys().next().value);
    grammars.set(key, grammar);
    return grammar;
  }

  /** OpenAI messages → node-llama-cpp chat history ending with the (empty) model turn to generate. */
  function toHistory(messages) {
    if (!Array.isArray(messages) || messages.length === 0) throw new ApiError(400, "'messages' must be a non-empty array.", { param: 'messages' });
    const history = messages.map((m, i) => {
      const text = contentText(m?.content, i);
      if (m?.role === 'system' || m?.role === 'developer') return { type: 'system', text };
      if (m?.role === 'user') return { type: 'user', text };
      if (m?.role === 'assistant') return { type: 'model', response: [text] };
      throw new ApiError(400, `Invalid value for 'messages[${i}].role': '${m?.role}'. Supported: 'system', 'developer', 'user', 'assistant'.`, {
        param: `messages[${i}].role`,
      });
    });
    history.push({ type: 'model', response: [] });
    return history;
  }

  function contentText(content, i) {
    if (typeof content === 'string') return content;
    if (Array.isArray(content) && content.every((p) => p?.type === 'text' && typeof p.text === 'string')) return content.map((p) => p.text).join('');
    throw new ApiError(400, `Invalid 'messages[${i}].content': a string or an array of text parts is expected.`, { param: `messages[${i}].content` });
  }

  function sampling(body) {
    const maxTokens = body.max_completion_tokens ?? body.max_tokens;
    if (maxTokens != null && !(Number.isInteger(maxTokens) && maxTokens > 0))
      throw new ApiError(400, "'max_tokens' must be a positive integer.", { param: 'max_tokens' });
    if ((body.n ?? 1) !== 1) throw new ApiError(400, "Only 'n': 1 is supported.", { param: 'n' });
    const temperature = body.temperature ?? 1;
    if (typeof temperature !== 'number' || temperature < 0 || temperature > 2)
      throw new ApiError(400, "'temperature' must be a number between 0 and 2.", { param: 'temperature' });
    const stop = body.stop == null ? [] : Array.isArray(body.stop) ? body.stop : [body.stop];
    return {
      maxTokens: maxTokens ?? Infinity,
      temperature,
      ...(typeof body.top_p === 'number' ? { topP: body.top_p } : {}),
      ...(Number.isInteger(body.seed) ? { seed: body.seed } : {}),
      ...(stop.length > 0 ? { customStopTriggers: stop.map(String) } : {}),
    };
  }

  /**
   * One completion on a free sequence. `onText` receives the generated text as it comes.
   * @returns {{content: string, finishReason: 'stop'|'length', usage: {prompt_tokens, completion_tokens, total_tokens}}}
   */
  async function complete(body, signal, onText) {
    if (typeof body.model !== 'string' || body.model !== modelName) {
      throw new ApiError(404, `The model '${body.model}' does not exist. This server serves '${modelName}'.`, { param: 'model', code: 'model_not_found' });
    }
    const history = toHistory(body.messages);
    const options = sampling(body);
    const grammar = await grammarFor(body.response_format);
    return slots.use(async (chat) => {
      const promptTokens = chat.chatWrapper.generateContextState({ chatHistory: history }).contextText.tokenize(model.tokenizer).length;
      const requested = body.max_completion_tokens ?? body.max_tokens ?? 0;
      if (promptTokens + Math.max(requested, 1) > context.contextSize) {
        throw new ApiError(
          400,
          `This model's maximum context length is ${context.contextSize} tokens. However, you requested ${promptTokens + requested} tokens (${promptTokens} in the messages, ${requested} in the completion).`,
          { param: 'messages', code: 'context_length_exceeded' },
        );
      }
      let completionTokens = 0;
      const result = await chat.generateResponse(history, {
        ...options,
        maxTokens: Math.min(options.maxTokens, context.contextSize - promptTokens),
        grammar,
        signal,
        onToken: (tokens) => {
          completionTokens += tokens.length;
        },
        onTextChunk: onText,
      });
      return {
        content: result.response,
        finishReason: result.metadata.stopReason === 'maxTokens' ? 'length' : 'stop',
        usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens },
      };
    });
  }

  async function chatCompletions(req, res, body) {
    const id = `chatcmpl-${randomBytes(12).toString('hex')}`;
    const now = Math.floor(Date.now() / 1000);
    const abort = new AbortController();
    res.on('close', () => abort.abort());
    if (!body.stream) {
      const r = await complete(body, abort.signal);
      sendJson(res, 200, {
        id,
        object: 'chat.completion',
        created: now,
        model: modelName,
        choices: [{ index: 0, message: { role: 'assistant', content: r.content, refusal: null }, logprobs: null, finish_reason: r.finishReason }],
        usage: r.usage,
      });
      return;
    }
    // Streamed: errors found before the first token are ordinary JSON errors (as OpenAI does);
    // the SSE head is written with the first chunk.
    const chunk = (choices, extra = {}) => ({ id, object: 'chat.completion.chunk', created: now, model: modelName, choices, ...extra });
    const send = (payload) => res.write(`data: ${JSON.stringify(payload)}\n\n`);
    const head = () => {
      if (res.headersSent) return;
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' });
      send(chunk([{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }]));
    };
    const r = await complete(body, abort.signal, (text) => {
      if (!text || res.destroyed) return;
      head();
      send(chunk([{ index: 0, delta: { content: text }, logprobs: null, finish_reason: null }]));
    });
    head();
    send(chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: r.finishReason }]));
    if (body.stream_options?.include_usage) send(chunk([], { usage: r.usage }));
    res.end('data: [DONE]\n\n');
  }

  const server = http.createServer((req, res) => {
    handle(req, res).catch((e) => {
      if (abortLike(e) && res.destroyed) return;
      const error =
        e instanceof ApiError ? e : new ApiError(500, `The server had an error while processing your request: ${e?.message ?? e}`, { type: 'server_error' });
      if (!error.status || error.status >= 500) process.stderr.write(`llm-server: ${e?.stack ?? e}\n`);
      if (res.headersSent) {
        // The stream has begun: end it with an error event, as OpenAI does.
        res.end(`data: ${JSON.stringify({ error: errorBody(error) })}\n\n`);
        return;
      }
      sendJson(res, error.status, { error: errorBody(error) });
    });
  });

  async function handle(req, res) {
    const url = new URL(req.url, 'http://localhost');
    if (o.apiKey && req.headers.authorization !== `Bearer ${o.apiKey}`) {
      throw new ApiError(401, 'Incorrect API key provided.', { code: 'invalid_api_key' });
    }
    if (req.method === 'GET' && url.pathname === '/health') return sendJson(res, 200, { status: 'ok' });
    if (req.method === 'GET' && url.pathname === '/v1/models') {
      return sendJson(res, 200, { object: 'list', data: [{ id: modelName, object: 'model', created, owned_by: 'kb-llm-server' }] });
    }
    if (req.method === 'GET' && url.pathname.startsWith('/v1/models/')) {
      const id = decodeURIComponent(url.pathname.slice('/v1/models/'.length));
      if (id !== modelName) throw new ApiError(404, `The model '${id}' does not exist.`, { param: 'model', code: 'model_not_found' });
      return sendJson(res, 200, { id: modelName, object: 'model', created, owned_by: 'kb-llm-server' });
    }
    if (url.pathname === '/v1/chat/completions') {
      if (req.method !== 'POST') throw new ApiError(405, `${req.method} is not allowed on ${url.pathname}; use POST.`);
      return chatCompletions(req, res, await readJson(req));
    }
    throw new ApiError(404, `Invalid URL (${req.method} ${url.pathname})`, { code: 'unknown_url' });
  }

  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port ?? 0, o.host ?? '127.0.0.1', resolve);
  });
  const { address, port } = server.address();
  const host = address.includes(':') ? `[${address}]` : address;
  return {
    baseUrl: `http://${host}:${port}/v1`,
    model: modelName,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(() => resolve()));
      await context.dispose();
      await model.dispose();
      await llama.dispose();
    },
  };
}

function errorBody(e) {
  return { message: e.message, type: e.type, param: e.param, code: e.code };
}

function abortLike(e) {
  return e?.name === 'AbortError' || e?.code === 'ABORT_ERR';
}

function sendJson(res, status, payload) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(payload));
}

async function readJson(req) {
  const parts = [];
  let size = 0;
  for await (const c of req) {
    size += c.length;
    if (size > MAX_BODY_BYTES) throw new ApiError(413, `The request body is larger than ${MAX_BODY_BYTES} bytes.`);
    parts.push(c);
  }
  try {
    const body = JSON.parse(Buffer.concat(parts).toString('utf8'));
    if (body && typeof body === 'object' && !Array.isArray(body)) return body;
  } catch {}
  throw new ApiError(400, 'We could not parse the JSON body of your request. The body must be a JSON object.');
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      model: { type: 'string' },
      name: { type: 'string' },
      host: { type: 'string', default: '127.0.0.1' },
      port: { type: 'string', default: '0' },
      threads: { type: 'string' },
      'context-size': { type: 'string', default: '8192' },
      parallel: { type: 'string', default: '1' },
      'api-key': { type: 'string' },
    },
  });
  if (!values.model) {
    process.stderr.write(
      'usage: node tools/llm-server/server.mjs --model <file.gguf> [--port 0] [--name NAME] [--threads N] [--context-size 8192] [--parallel 1] [--api-key KEY]\n',
    );
    process.exit(2);
  }
  const server = await startLlmServer({
    modelPath: values.model,
    modelName: values.name,
    host: values.host,
    port: Number(values.port),
    threads: values.threads ? Number(values.threads) : undefined,
    contextSize: Number(values['context-size']),
    parallel: Number(values.parallel),
    apiKey: values['api-key'],
  });
  process.stdout.write(`READY ${JSON.stringify({ baseUrl: server.baseUrl, model: server.model })}\n`);
  const stop = () =>
    server.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

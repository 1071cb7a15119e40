import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { KbTransport } from './transport';
import { KbApiError } from './errors';
import type { components } from './generated/openapi';
import type { ChatReply, ChatRequest } from './types';

type Schemas = components['schemas'];

/**
 * One Server-Sent Event of a streamed chat reply with its `data` parsed: the document declares
 * `data` as JSON text (a string whose `contentSchema` is the event's model); the SDK yields the
 * parsed model.
 */
type StreamEvent =
  | { event: 'meta'; data: Schemas['ChatMetaEventData'] }
  | { event: 'delta'; data: Schemas['ChatDeltaEventData'] }
  | { event: 'citations'; data: Schemas['ChatCitationsEventData'] }
  | { event: 'done'; data: Schemas['ChatDoneEventData'] }
  | { event: 'error'; data: Schemas['ChatErrorEventData'] };

/**
 * The events a streamed chat yields, in the order the service sends them (decisions.md "POST
 * /api/v2/chat"): `meta`, one or more `delta`, `citations`, `done`. (An `error` event is thrown.)
 */
export type ChatEvent = Exclude<StreamEvent, { event: 'error' }>;

/**
 * Sends a conversation to POST /api/v2/chat with `stream: true` and yields its events as they
 * arrive (parsed with eventsource-parser). A plain string is one user message.
 * Errors before the stream begins (validation, 403 AGENT_NOT_ENABLED, 429 after retries…) and an
 * `error` event inside the stream are thrown as {@link KbApiError} (an `error` event with status 200
 * and the `request_id` of the `meta` event).
 */
export async function* chat(
  kb: KbTransport,
  request: Omit<ChatRequest, 'stream'> | string,
  options: { signal?: AbortSignal } = {},
): AsyncGenerator<ChatEvent, void, undefined> {
  const body = typeof request === 'string' ? { messages: [{ role: 'user' as const, content: request }] } : request;
  const response = await kb.raw('/api/v2/chat', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream' },
    body: JSON.stringify({ ...body, stream: true }),
    signal: options.signal,
  });
  if (!response.ok) throw await KbApiError.fromResponse(response);
  if (!(response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    throw KbApiError.of(
      response.status,
      'HTTP_' + response.status,
      `Expected an event stream, got ${response.headers.get('content-type')}.`,
      response.headers.get('x-request-id'),
    );
  }
  const queue: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (message) => queue.push(message) });
  const decoder = new TextDecoder();
  let requestId: string | null = response.headers.get('x-request-id');
  const reader = response.body!.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (value) parser.feed(decoder.decode(value, { stream: true }));
      while (queue.length > 0) {
        const message = queue.shift()!;
        const data = JSON.parse(message.data) as { code?: string; message?: string; request_id?: string };
        if (message.event === 'error')
          throw KbApiError.of(200, String(data.code ?? 'INTERNAL_ERROR'), String(data.message ?? 'The chat stream failed.'), requestId);
        if (message.event === 'meta') requestId = data.request_id ?? requestId;
        yield { event: message.event, data } as ChatEvent;
      }
      if (done) return;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

/**
 * A streamed chat turn collected into the shape of the non-streamed reply, calling `onDelta` with
 * each piece of text as it arrives.
 * @throws KbApiError as {@link chat}.
 */
export async function chatText(
  kb: KbTransport,
  request: Omit<ChatRequest, 'stream'> | string,
  onDelta?: (text: string) => void,
  options: { signal?: AbortSignal } = {},
): Promise<ChatReply & { request_id: string | null; finish_reason: string | null }> {
  const reply = { message: { role: 'assistant', content: '' }, citations: [], request_id: null, finish_reason: null } as unknown as ChatReply & {
    request_id: string | null;
    finish_reason: string | null;
  };
  for await (const event of chat(kb, request, options)) {
    if (event.event === 'meta') Object.assign(reply, event.data);
    else if (event.event === 'delta') {
      reply.message.content += event.data.content;
      onDelta?.(event.data.content);
    } else if (event.event === 'citations') reply.citations = event.data.citations;
    else if (event.event === 'done') Object.assign(reply, event.data);
  }
  return reply;
}

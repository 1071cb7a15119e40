import { AppError, type CallContext, ErrorCode, MAX_CHAT_MESSAGES } from '@kb/common';
import { agentV1 } from '@kb/proto';
import { Body, HttpCode, Inject, Post, Res } from '@nestjs/common';
import { ApiOperation, ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsBoolean, IsIn, IsOptional, IsString, ValidateNested } from 'class-validator';
import type { FastifyReply } from 'fastify';
import { PassThrough } from 'node:stream';
import { AccountsService } from '../accounts/accounts.service';
import { type AgentClient } from '../common/clients';
import { RAW_RESPONSE } from '../common/envelope';
import { Ctx } from '../common/http-context';
import { CharLength, EachItemAnObject, OptionalUuid, OptionalUuidList } from '../common/validation';
import { ACCOUNTS, AGENT_CLIENT, CHAT_SSE_HEARTBEAT_MS } from '../common/tokens';
import { ChatTypeField, TOP_K_DEFAULT, TopKField } from './agent.controller';
import { AGENT_STREAM_CLIENT, AgentStreamClient } from './chat-stream.client';
import { presentAnswerFields, presentCitation, presentConfidence, presentUsage } from './presenters';
import { ApiController, ApiEnvelope, ApiErrors, ApiEventStream } from '../common/openapi';
import { ChatCitationsEventData, ChatDeltaEventData, ChatDoneEventData, ChatErrorEventData, ChatMetaEventData, ChatReplyView } from './agent-views';

export class ChatMessageDto {
  @ApiProperty({ enum: ['user', 'assistant'], example: 'user' })
  @IsIn(['user', 'assistant'], { message: 'role must be user or assistant' })
  role: 'user' | 'assistant';

  @ApiProperty({ minLength: 1, maxLength: 8000, example: 'What must be checked before using a scaffold?' })
  @IsString({ message: 'content must be a string' })
  @CharLength(1, 8000, { message: 'content must be 1 to 8000 characters' })
  content: string;
}

export class ChatDto {
  @ApiProperty({ type: [ChatMessageDto], minItems: 1, maxItems: MAX_CHAT_MESSAGES, description: 'Conversation so far; the last message is from the user.' })
  @IsArray({ message: 'messages must be an array' })
  @ArrayMinSize(1, { message: 'messages must have at least 1 item' })
  @ArrayMaxSize(MAX_CHAT_MESSAGES, { message: `messages must have at most ${MAX_CHAT_MESSAGES} items` })
  @EachItemAnObject('messages')
  @ValidateNested({ each: true })
  @Type(() => ChatMessageDto)
  messages: ChatMessageDto[];

  @ChatTypeField('Omit to let the service route (safety / project / general).')
  chat_type?: string;

  @OptionalUuid('project_id', { example: '0b6f3f1e-8a51-4a4e-9f37-2f7d6c1f4a10', description: 'Required for chat_type project.' })
  project_id?: string;

  @OptionalUuidList('document_ids')
  document_ids?: string[];

  @TopKField(6)
  top_k?: number;

  @ApiPropertyOptional({ default: false, example: true, description: 'true: reply as Server-Sent Events (meta, delta…, citations, done | error).' })
  @IsOptional()
  @IsBoolean({ message: 'stream must be a boolean' })
  stream?: boolean;
}

/** One SSE frame (WHATWG HTML "Server-sent events": `event:` + one `data:` line per line + blank line). */
export function sseFrame(event: string, data: unknown): string {
  const json = JSON.stringify(data);
  return `event: ${event}\n${json
    .split('\n')
    .map((l) => `data: ${l}`)
    .join('\n')}\n\n`;
}

/** /api/v2/chat: multi-turn conversation, JSON or Server-Sent Events. */
@ApiController('Agent', 'api/v2/chat')
export class ChatController {
  /** An SSE comment is sent when nothing else was sent for this long (ms), so proxies keep the stream open. */
  private readonly heartbeatMs: number;

  constructor(
    @Inject(AGENT_CLIENT) private readonly agent: AgentClient,
    @Inject(AGENT_STREAM_CLIENT) private readonly streams: AgentStreamClient,
    @Inject(ACCOUNTS) private readonly accounts: AccountsService,
    @Inject(CHAT_SSE_HEARTBEAT_MS) heartbeatMs: number,
  ) {
    this.heartbeatMs = heartbeatMs;
  }

  @Post()
  @HttpCode(200)
  @ApiOperation({
    operationId: 'chat',
    summary: 'Chat with the agent (JSON, or Server-Sent Events with stream: true)',
    description:
      'stream false: JSON `{ message, citations, agent, model, usage, confidence }`. stream true: `text/event-stream` with events `meta` `{agent, model, request_id}`, `delta` `{content}` (one or more), `citations` `{citations, confidence}`, `done` `{usage, finish_reason}`; a failure after the stream began is an `error` `{code, message}` event. Comment lines (`: heartbeat`) keep long streams open. `confidence` (0–1, calibrated): below 0.7 the sources may not answer the question; then the answer says nothing was found and cites nothing.',
  })
  @ApiEnvelope(ChatReplyView, { description: 'Assistant reply (JSON envelope), or an SSE stream when `stream` is true.' })
  @ApiEventStream(
    'ChatStreamEvent',
    { meta: ChatMetaEventData, delta: ChatDeltaEventData, citations: ChatCitationsEventData, done: ChatDoneEventData, error: ChatErrorEventData },
    {
      description:
        '`stream` false or omitted: the reply in the JSON envelope. `stream` true: `text/event-stream`, events `meta`, then `delta` (one or more), `citations`, `done`; or `error` once the stream has begun. Failures before the stream begins are JSON error envelopes.',
    },
  )
  @ApiErrors(ErrorCode.AGENT_NOT_ENABLED, ErrorCode.NOT_FOUND)
  async chat(@Ctx() ctx: CallContext, @Body() body: ChatDto, @Res() reply: FastifyReply) {
    if (body.messages[body.messages.length - 1].role !== 'user') throw AppError.validation('The last message must have role user.');
    const safetyAssistantEnabled = await this.accounts.safetyAssistantEnabled(ctx.orgId);
    const request: agentV1.ChatRequest = {
      messages: body.messages.map((m) => ({ role: m.role, content: m.content })),
      chatType: body.chat_type ?? undefined,
      projectId: body.project_id ?? undefined,
      documentIds: body.document_ids ?? [],
      topK: body.top_k ?? TOP_K_DEFAULT,
      safetyAssistantEnabled,
    };
    if (!body.stream) {
      const r = await this.agent.chat(request, { ...ctx, timeoutMs: 5 * 60 * 1000 });
      // An object payload: the envelope hook wraps it like any handler's result.
      await reply.status(200).send({
        message: { role: 'assistant', content: r.message?.content ?? '' },
        ...presentAnswerFields(r),
      });
      return RAW_RESPONSE;
    }
    await this.stream(ctx, request, reply);
    return RAW_RESPONSE;
  }

  /**
   * Relays ChatStream as SSE. The first event is awaited before any byte is sent, so failures
   * before the stream begins (403, 404, 503 …) still get the JSON envelope and status code. Then
   * each event is written only after the previous one was accepted by the socket (backpressure),
   * a heartbeat comment goes out after CHAT_SSE_HEARTBEAT_MS of silence, and a client that
   * disconnects cancels the gRPC call, which stops the work in the agent.
   */
  private async stream(ctx: CallContext, request: agentV1.ChatRequest, reply: FastifyReply): Promise<void> {
    const call = this.streams.open(request, ctx);
    let first: IteratorResult<agentV1.ChatEvent>;
    try {
      first = await call.events.next();
    } catch (e) {
      call.cancel();
      throw e;
    }
    if (first.done || !first.value.meta) {
      call.cancel();
      throw new AppError(ErrorCode.INTERNAL_ERROR, 'The agent ended the stream before it began. Retry later.');
    }
    const out = new PassThrough();
    out.on('error', () => undefined); // a write racing a client disconnect is not an error
    let finished = false;
    let lastWrite = Date.now();
    const write = async (chunk: string) => {
      if (out.destroyed) return;
      lastWrite = Date.now();
      if (!out.write(chunk)) await new Promise<void>((resolve) => (out.once('drain', resolve), out.once('close', resolve)));
    };
    const heartbeat = setInterval(
      () => {
        if (Date.now() - lastWrite >= this.heartbeatMs && !out.destroyed) {
          lastWrite = Date.now();
          out.write(': heartbeat\n\n');
        }
      },
      Math.max(100, Math.min(this.heartbeatMs / 2, 5000)),
    );
    const clientGone = () => {
      if (!finished) {
        finished = true;
        call.cancel();
        out.destroy(); // releases a write waiting for 'drain' from a socket that is gone
      }
    };
    reply.raw.once('close', clientGone);
    reply
      .status(200)
      .header('Content-Type', 'text/event-stream; charset=utf-8')
      .header('Cache-Control', 'no-cache, no-transform')
      .header('X-Accel-Buffering', 'no');
    void reply.send(out);
    try {
      await write(sseFrame('meta', { agent: first.value.meta.agent, model: first.value.meta.model, request_id: ctx.requestId }));
      for (;;) {
        if (finished) break;
        const next = await call.events.next();
        if (next.done) break;
        const e = next.value;
        if (e.delta) await write(sseFrame('delta', { content: e.delta.content }));
        else if (e.citations)
          await write(sseFrame('citations', { citations: e.citations.citations.map(presentCitation), confidence: presentConfidence(e.citations.confidence) }));
        else if (e.done) await write(sseFrame('done', { usage: presentUsage(e.done.usage), finish_reason: e.done.finishReason }));
        else if (e.error) await write(sseFrame('error', { code: e.error.code, message: e.error.message }));
      }
    } catch (e) {
      if (!finished) {
        const err = e instanceof AppError ? e : AppError.internal();
        await write(sseFrame('error', { code: err.code, message: err.message })).catch(() => undefined);
      }
    } finally {
      finished = true;
      clearInterval(heartbeat);
      reply.raw.off('close', clientGone);
      out.end();
    }
  }
}

import * as grpc from '@grpc/grpc-js';
import {
  AppError,
  CallContext,
  databaseUnavailableError,
  ErrorCode,
  Logger,
  ORG_ID_METADATA_KEY,
  REQUEST_ID_METADATA_KEY,
  runWithContext,
  toGrpcError,
  UnaryHandlers,
  MAX_CHAT_MESSAGES,
} from '@kb/common';
import { citationToProto } from '@kb/knowledge';
import { isAbortError, providerAppError, type ProviderErrorMessages } from '@kb/models';
import { agentV1 } from '@kb/proto';
import { batchStatus } from '@kb/events';
import { randomUUID } from 'node:crypto';
import { AnswerRequest, AnswerService } from '../answering/answer.service';
import type { ConversationMessage } from '../answering/rewrite';
import { toBatch } from './agent.mappers';
import { BatchesService } from '../batches/batches.service';

/** The unary methods of the agent service (ChatStream is registered separately, see {@link chatStreamHandler}). */
export type AgentUnaryDefinition = Omit<typeof agentV1.AgentServiceService, 'chatStream'>;

/** What the agent's clients are told when the chat model fails (providerAppError). */
const CHAT_MODEL_FAILURE: ProviderErrorMessages = {
  unavailable: 'The chat model is unavailable or returned an error. Retry later.',
  timeout: 'The chat model is unavailable or returned an error. Retry later.',
};

/** Maps any answering failure to the AppError a client sees (model failures or an unreachable database → SERVICE_UNAVAILABLE, or TIMEOUT). */
export function toClientError(error: unknown): AppError {
  const mapped = providerAppError(error, CHAT_MODEL_FAILURE);
  return mapped instanceof AppError ? mapped : (databaseUnavailableError(error) ?? AppError.internal());
}

function chatInput(req: agentV1.ChatRequest, source: AnswerRequest['source'], signal?: AbortSignal): AnswerRequest {
  if (req.messages.length < 1 || req.messages.length > MAX_CHAT_MESSAGES) throw AppError.validation(`messages must have 1 to ${MAX_CHAT_MESSAGES} items.`);
  const messages: ConversationMessage[] = req.messages.map((m) => {
    if (m.role !== 'user' && m.role !== 'assistant') throw AppError.validation('Each message role must be user or assistant.');
    return { role: m.role, content: m.content };
  });
  return {
    messages,
    chatType: req.chatType,
    projectId: req.projectId,
    documentIds: req.documentIds,
    topK: req.topK || 8,
    safetyAssistantEnabled: req.safetyAssistantEnabled,
    source,
    signal,
  };
}

/** Unary handlers: Query, Chat (non-streamed), batches. */
export function agentUnaryHandlers(answers: AnswerService, batches: BatchesService): UnaryHandlers<AgentUnaryDefinition> {
  return {
    query: async (req, ctx) => {
      // Its own wording (not chat's "last message…"): the client sent `question`.
      if (!req.question.trim()) throw AppError.validation('question must not be blank (only whitespace).');
      const r = await answers
        .answer(ctx, {
          messages: [{ role: 'user', content: req.question }],
          chatType: req.chatType,
          projectId: req.projectId,
          documentIds: req.documentIds,
          topK: req.topK || 8,
          safetyAssistantEnabled: req.safetyAssistantEnabled,
          source: 'agent.query',
        })
        .catch((e) => Promise.reject(toClientError(e)));
      return { answer: r.answer, citations: r.citations.map(citationToProto), agent: r.agent, model: r.model, usage: r.usage, confidence: r.confidence };
    },
    chat: async (req, ctx) => {
      const r = await answers.answer(ctx, chatInput(req, 'agent.chat')).catch((e) => Promise.reject(toClientError(e)));
      return {
        message: { role: 'assistant', content: r.answer },
        citations: r.citations.map(citationToProto),
        agent: r.agent,
        model: r.model,
        usage: r.usage,
        finishReason: r.finishReason,
        confidence: r.confidence,
      };
    },
    createBatch: async (req, ctx) => toBatch(await batches.create(ctx, req), []),
    listBatches: async (req, ctx) => {
      const status = req.status === undefined ? undefined : batchStatus.fromProto(req.status);
      const { rows, total } = await batches.list(ctx, { projectId: req.projectId, status, limit: req.limit, offset: req.offset });
      return { batches: rows.map((r) => toBatch(r, [])), total };
    },
    getBatch: async (req, ctx) => {
      const { batch, questions } = (await batches.get(ctx, req.id))!;
      return toBatch(batch, questions);
    },
  };
}

/**
 * Server-streaming ChatStream. Events: `meta`, `delta`…, `citations` (with `confidence`), `done`; a failure after
 * `meta` is sent as an `error` event and the stream ends; a failure before it ends the call with
 * the usual gRPC status (so the gateway can still answer with a JSON error envelope).
 *
 * Backpressure: each write waits for the transport to drain when grpc-js reports its buffer full,
 * and the answerer awaits each write, so a slow client slows the producer instead of buffering.
 * Cancellation: when the caller cancels (the HTTP client went away), the AbortSignal given to the
 * answerer fires, which aborts retrieval follow-ups and the model's HTTP call.
 */
export function chatStreamHandler(answers: AnswerService, logger: Logger): grpc.handleServerStreamingCall<agentV1.ChatRequest, agentV1.ChatEvent> {
  return (call) => {
    const orgId = call.metadata.get(ORG_ID_METADATA_KEY)[0];
    const requestIdRaw = call.metadata.get(REQUEST_ID_METADATA_KEY)[0];
    const requestId = typeof requestIdRaw === 'string' && requestIdRaw ? requestIdRaw : randomUUID();
    const abort = new AbortController();
    call.on('cancelled', () => abort.abort());
    const write = (event: agentV1.ChatEvent) =>
      new Promise<void>((resolve, reject) => {
        if (call.cancelled || abort.signal.aborted) return reject(new AppError(ErrorCode.TIMEOUT, 'The request was cancelled.'));
        if (call.write(event)) resolve();
        else {
          const onDrain = () => {
            call.off('cancelled', onCancel);
            resolve();
          };
          const onCancel = () => {
            call.off('drain', onDrain);
            reject(new AppError(ErrorCode.TIMEOUT, 'The request was cancelled.'));
          };
          call.once('drain', onDrain);
          call.once('cancelled', onCancel);
        }
      });
    runWithContext({ requestId, orgId: typeof orgId === 'string' ? orgId : undefined }, () => {
      if (typeof orgId !== 'string' || !orgId) {
        call.emit('error', toGrpcError(new AppError(ErrorCode.UNAUTHORIZED, 'Missing organization context.')));
        return;
      }
      const ctx: CallContext = { orgId, requestId };
      let started = false;
      const started_at = Date.now();
      void (async () => {
        try {
          const input = chatInput(call.request, 'agent.chat', abort.signal);
          const r = await answers.answer(ctx, input, {
            onMeta: async (agent, model) => {
              started = true;
              await write({ meta: { agent, model } });
            },
            onDelta: (content) => write({ delta: { content } }),
          });
          await write({ citations: { citations: r.citations.map(citationToProto), confidence: r.confidence } });
          await write({ done: { usage: r.usage, finishReason: r.finishReason } });
          call.end();
          logger.debug({ rpc: 'ChatStream', ms: Date.now() - started_at }, 'rpc ok');
        } catch (e) {
          if (abort.signal.aborted || call.cancelled || isAbortError(e)) {
            logger.info({ rpc: 'ChatStream', ms: Date.now() - started_at }, 'chat stream cancelled by the caller; work stopped');
            return;
          }
          const err = toClientError(e);
          if (!(e instanceof AppError)) logger.error({ err: e, rpc: 'ChatStream' }, 'chat stream failed');
          if (!started) {
            call.emit('error', toGrpcError(err));
            return;
          }
          try {
            await write({ error: { code: err.code, message: err.message } });
            call.end();
          } catch {
            /* caller already gone */
          }
        }
      })();
    });
  };
}

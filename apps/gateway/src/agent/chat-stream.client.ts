import * as grpc from '@grpc/grpc-js';
import { CallContext, fromGrpcError, GRPC_CLIENT_CHANNEL_OPTIONS, ORG_ID_METADATA_KEY, REQUEST_ID_METADATA_KEY } from '@kb/common';
import { agentV1 } from '@kb/proto';

/** Token of the streaming chat client in the gateway's DI container. */
export const AGENT_STREAM_CLIENT = Symbol('AgentStreamClient');

/** An open ChatStream call: its events as an async iterator (errors are AppErrors) and `cancel()`. */
export interface ChatStreamCall {
  events: AsyncIterator<agentV1.ChatEvent>;
  cancel(): void;
}

/**
 * Client of the agent's server-streaming `ChatStream` RPC (the shared async client covers unary
 * calls only). Reading is pull-based: the next message is taken from grpc-js only when the caller
 * asks for it, so HTTP/2 flow control pushes back to the agent while the HTTP client is slow.
 */
export class AgentStreamClient {
  private readonly client: grpc.Client;

  constructor(address: string) {
    this.client = new grpc.Client(address, grpc.credentials.createInsecure(), GRPC_CLIENT_CHANNEL_OPTIONS);
  }

  /**
   * Starts a ChatStream call carrying the org and request id in metadata.
   * @param timeoutMs deadline of the whole stream.
   */
  open(request: agentV1.ChatRequest, ctx: CallContext, timeoutMs = 10 * 60 * 1000): ChatStreamCall {
    const metadata = new grpc.Metadata();
    metadata.set(ORG_ID_METADATA_KEY, ctx.orgId);
    metadata.set(REQUEST_ID_METADATA_KEY, ctx.requestId);
    if (ctx.trace) for (const [k, v] of Object.entries(ctx.trace)) metadata.set(k, v);
    const m = agentV1.AgentServiceService.chatStream;
    const call = this.client.makeServerStreamRequest(m.path, m.requestSerialize, m.responseDeserialize, request, metadata, {
      deadline: Date.now() + timeoutMs,
    });
    const iterator = call[Symbol.asyncIterator]() as AsyncIterator<agentV1.ChatEvent>;
    const events: AsyncIterator<agentV1.ChatEvent> = {
      next: async () => {
        try {
          return await iterator.next();
        } catch (e) {
          throw fromGrpcError(e as grpc.ServiceError);
        }
      },
    };
    return { events, cancel: () => call.cancel() };
  }

  close(): void {
    this.client.close();
  }
}

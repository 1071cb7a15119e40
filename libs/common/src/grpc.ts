import * as grpc from '@grpc/grpc-js';
import { HealthImplementation, ServingStatusMap } from 'grpc-health-check';
import { randomUUID } from 'node:crypto';
import { AppError, ErrorCode, fromGrpcError, toGrpcError } from './errors';
import { databaseUnavailableError } from './db-errors';
import { currentContext, Logger, runWithContext } from './logger';
import { observeGrpcCall } from '@kb/telemetry'; // [telemetry] gRPC server metrics

/** Metadata keys carrying the caller's organization and the request id between services. */
export const ORG_ID_METADATA_KEY = 'x-org-id';
export const REQUEST_ID_METADATA_KEY = 'x-request-id';
/** Metadata keys carrying the caller's API key (id, and name percent-encoded) for the audit log. */
export const API_KEY_ID_METADATA_KEY = 'x-api-key-id';
export const API_KEY_NAME_METADATA_KEY = 'x-api-key-name';

/** The API key a request authenticated with (audit log actor); name null when the key has none. */
export interface CallActor {
  apiKeyId: string;
  apiKeyName: string | null;
}

/** Context of one inbound gRPC call: the org every query must filter by, and the request id. */
export interface CallContext {
  orgId: string;
  requestId: string;
  /** W3C trace-context headers of the caller's span, when it propagates explicitly (the gateway). */
  trace?: Record<string, string>;
  /** The caller's API key, when the call comes from an authenticated HTTP request (audit log). */
  actor?: CallActor;
}

/** A unary method of a ts-proto `outputServices=grpc-js` service definition. */
interface UnaryMethodDefinition<Req, Res> {
  path: string;
  requestStream: false;
  responseStream: false;
  requestSerialize: (value: Req) => Buffer;
  requestDeserialize: (value: Buffer) => Req;
  responseSerialize: (value: Res) => Buffer;
  responseDeserialize: (value: Buffer) => Res;
}
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a registry of services of different types: each is checked where it is registered
type AnyDefinition = Record<string, UnaryMethodDefinition<any, any> | { requestStream: boolean; responseStream: boolean; path: string }>;
type ReqOf<M> = M extends { requestDeserialize: (b: Buffer) => infer R } ? R : never;
type ResOf<M> = M extends { responseDeserialize: (b: Buffer) => infer R } ? R : never;

/** Async implementation of every unary method of a service definition. */
export type UnaryHandlers<D extends AnyDefinition> = {
  [K in keyof D]: (request: ReqOf<D[K]>, ctx: CallContext) => Promise<ResOf<D[K]>>;
};

function readContext(metadata: grpc.Metadata): { orgId?: string; requestId: string; actor?: CallActor } {
  const orgId = metadata.get(ORG_ID_METADATA_KEY)[0];
  const requestId = metadata.get(REQUEST_ID_METADATA_KEY)[0];
  const keyId = metadata.get(API_KEY_ID_METADATA_KEY)[0];
  const keyName = metadata.get(API_KEY_NAME_METADATA_KEY)[0];
  let apiKeyName: string | null = null;
  if (typeof keyName === 'string' && keyName.length > 0) {
    try {
      apiKeyName = decodeURIComponent(keyName);
    } catch {
      apiKeyName = keyName;
    }
  }
  return {
    orgId: typeof orgId === 'string' && orgId.length > 0 ? orgId : undefined,
    requestId: typeof requestId === 'string' && requestId.length > 0 ? requestId : randomUUID(),
    ...(typeof keyId === 'string' && keyId.length > 0 ? { actor: { apiKeyId: keyId, apiKeyName } } : {}),
  };
}

/**
 * Wraps async handlers into grpc-js handlers: reads org and request id from metadata (calls
 * without `x-org-id` are rejected with UNAUTHENTICATED), runs the handler inside the request
 * context, maps AppError to a gRPC status with the exact code in a trailer, a database that cannot
 * be reached (`isDatabaseUnavailable`) to UNAVAILABLE / SERVICE_UNAVAILABLE, and hides anything
 * else behind INTERNAL (logged with its stack).
 */
export function adaptHandlers<D extends AnyDefinition>(definition: D, handlers: UnaryHandlers<D>, logger: Logger): grpc.UntypedServiceImplementation {
  const impl: grpc.UntypedServiceImplementation = {};
  for (const name of Object.keys(definition)) {
    const handler = handlers[name as keyof D];
    const path = definition[name].path;
    impl[name] = ((call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => {
      const { orgId, requestId, actor } = readContext(call.metadata);
      const started = process.hrtime.bigint();
      runWithContext({ requestId, orgId }, () => {
        if (!orgId) {
          callback(toGrpcError(new AppError(ErrorCode.UNAUTHORIZED, 'Missing organization context.')));
          return;
        }
        handler(call.request as never, { orgId, requestId, ...(actor ? { actor } : {}) }).then(
          (response) => {
            const ms = Number(process.hrtime.bigint() - started) / 1e6;
            logger.debug({ rpc: path, ms }, 'rpc ok');
            observeGrpcCall(path, 'OK', ms / 1000); // [telemetry]
            callback(null, response);
          },
          (thrown: unknown) => {
            const ms = Number(process.hrtime.bigint() - started) / 1e6;
            // PostgreSQL down or restarting: UNAVAILABLE (503 at the gateway), not INTERNAL.
            const unavailable = thrown instanceof AppError ? null : databaseUnavailableError(thrown);
            if (unavailable) logger.error({ rpc: path, ms, err: thrown }, 'rpc failed: database unavailable');
            const error = unavailable ?? thrown;
            if (error instanceof AppError) {
              logger.info({ rpc: path, ms, code: error.code, msg_text: error.message }, 'rpc error');
              const status = toGrpcError(error);
              observeGrpcCall(path, grpc.status[status.code] ?? String(status.code), ms / 1000); // [telemetry]
              callback(status);
            } else {
              logger.error({ rpc: path, ms, err: error }, 'rpc failed');
              observeGrpcCall(path, 'INTERNAL', ms / 1000); // [telemetry]
              callback(toGrpcError(AppError.internal()));
            }
          },
        );
      });
    }) as grpc.handleUnaryCall<unknown, unknown>;
  }
  return impl;
}

export interface GrpcServiceRegistration<D extends AnyDefinition> {
  /** Fully qualified service name, e.g. `kb.documents.v1.DocumentsService` (for health checks). */
  name: string;
  definition: D;
  handlers: UnaryHandlers<D>;
}

/**
 * Starts a grpc-js server with the given services plus the standard gRPC health service
 * (`grpc.health.v1.Health`). Binds `host:port` (port 0 picks a free port).
 *
 * @returns the server, the bound port and a `shutdown()` that drains in-flight calls (up to 10 s).
 */
export async function startGrpcServer(options: {
  host: string;
  port: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- services of different types, each checked by its registration
  services: GrpcServiceRegistration<any>[];
  logger: Logger;
}): Promise<{ server: grpc.Server; port: number; shutdown: () => Promise<void> }> {
  const server = new grpc.Server({
    'grpc.max_receive_message_length': 64 * 1024 * 1024,
    // [deploy] Clients reconnect (and re-resolve DNS) every 5 minutes, so replicas added by an
    // autoscaler behind a headless Service start receiving calls; in-flight calls get 6 more
    // minutes to finish (verify can take up to 5).
    'grpc.max_connection_age_ms': 5 * 60 * 1000,
    'grpc.max_connection_age_grace_ms': 6 * 60 * 1000,
  });
  const statusMap: ServingStatusMap = { '': 'SERVING' };
  for (const s of options.services) {
    server.addService(s.definition as grpc.ServiceDefinition, adaptHandlers(s.definition, s.handlers, options.logger));
    statusMap[s.name] = 'SERVING';
  }
  const health = new HealthImplementation(statusMap);
  health.addToServer(server);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${options.host}:${options.port}`, grpc.ServerCredentials.createInsecure(), (err, bound) => (err ? reject(err) : resolve(bound))),
  );
  const shutdown = () =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        server.forceShutdown();
        resolve();
      }, 10_000);
      server.tryShutdown(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  return { server, port, shutdown };
}

/**
 * Per-call options of an outgoing call: the caller's context, passed explicitly so that a reader
 * sees that the call is org-scoped (the logger's AsyncLocalStorage is for log lines only).
 */
export interface OutgoingCallOptions {
  /**
   * The organization the callee scopes the call to (`x-org-id`; every service rejects a call
   * without one). Operator tools name their org (`OPERATOR_ORG`, the safety corpus org).
   */
  orgId: string;
  /**
   * Request id for the callee's logs (`x-request-id`). When absent: the request id of the logging
   * context (a log-correlation id only, never used for scoping), else a new one.
   */
  requestId?: string;
  /** Deadline in milliseconds (default 30 000). */
  timeoutMs?: number;
  /**
   * W3C trace-context headers (`traceparent`…) to send as metadata, for callers that propagate
   * the trace explicitly (the gateway); otherwise the gRPC instrumentation writes them from the
   * active context.
   */
  trace?: Record<string, string>;
  /** The caller's API key (`x-api-key-id`, `x-api-key-name`), recorded by the callee's audit events. */
  actor?: CallActor;
}

/** Promise-based client: one async method per unary RPC of the definition. */
export type AsyncClient<D extends AnyDefinition> = {
  [K in keyof D]: (request: ReqOf<D[K]>, options: OutgoingCallOptions) => Promise<ResOf<D[K]>>;
} & { close(): void; waitForReady(timeoutMs: number): Promise<void> };

/**
 * Channel options of every client of the platform's services (unary and streaming):
 * - 64 MiB messages (a document's chunks);
 * - a keepalive ping every 30 s while calls are open, so a peer that vanished (a killed pod, a cut
 *   connection) is noticed; its answer may take 60 s. grpc-js drops the connection, and every call
 *   on it ends UNAVAILABLE, when a ping goes unanswered for `grpc.keepalive_timeout_ms` (default
 *   20 s), and a server answers pings on its event loop: a retrieval service busy for 20 s on a
 *   loaded 2-core machine (embedding a 2,000-chunk document while a check run searches) lost the
 *   ingestion worker's EmbedDocument call that way in CI. Each call still has its own deadline.
 * - round-robin over every address the name resolves to (a headless Kubernetes Service lists each
 *   replica); pick_first would pin one replica per client.
 */
export const GRPC_CLIENT_CHANNEL_OPTIONS: Readonly<grpc.ChannelOptions> = {
  'grpc.max_receive_message_length': 64 * 1024 * 1024,
  'grpc.keepalive_time_ms': 30_000,
  'grpc.keepalive_timeout_ms': 60_000,
  'grpc.service_config': JSON.stringify({ loadBalancingConfig: [{ round_robin: {} }] }),
};

/**
 * Creates a promise-based client for a ts-proto service definition. Every call takes the caller's
 * context explicitly (a {@link CallContext} fits {@link OutgoingCallOptions}) and carries its org id
 * and request id in metadata, has a deadline, and rejects with an AppError (see `fromGrpcError`).
 * @param channelOptions merged over {@link GRPC_CLIENT_CHANNEL_OPTIONS}.
 */
export function createAsyncClient<D extends AnyDefinition>(definition: D, address: string, channelOptions: grpc.ChannelOptions = {}): AsyncClient<D> {
  const client = new grpc.Client(address, grpc.credentials.createInsecure(), { ...GRPC_CLIENT_CHANNEL_OPTIONS, ...channelOptions });
  const api: Record<string, unknown> = {
    close: () => client.close(),
    waitForReady: (timeoutMs: number) =>
      new Promise<void>((resolve, reject) => client.waitForReady(Date.now() + timeoutMs, (err) => (err ? reject(err) : resolve()))),
  };
  for (const [name, method] of Object.entries(definition)) {
    const m = method as UnaryMethodDefinition<unknown, unknown>;
    api[name] = (request: unknown, options: OutgoingCallOptions) => {
      const metadata = new grpc.Metadata();
      metadata.set(ORG_ID_METADATA_KEY, options.orgId);
      metadata.set(REQUEST_ID_METADATA_KEY, options.requestId ?? currentContext()?.requestId ?? randomUUID());
      if (options.actor) {
        metadata.set(API_KEY_ID_METADATA_KEY, options.actor.apiKeyId);
        if (options.actor.apiKeyName) metadata.set(API_KEY_NAME_METADATA_KEY, encodeURIComponent(options.actor.apiKeyName));
      }
      if (options.trace) for (const [k, v] of Object.entries(options.trace)) metadata.set(k, v);
      const deadline = Date.now() + (options.timeoutMs ?? 30_000);
      return new Promise((resolve, reject) => {
        client.makeUnaryRequest(m.path, m.requestSerialize, m.responseDeserialize, request, metadata, { deadline }, (err, response) =>
          err ? reject(fromGrpcError(err)) : resolve(response),
        );
      });
    };
  }
  return api as AsyncClient<D>;
}

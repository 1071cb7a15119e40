import { CallContext } from '@kb/common';
import { traceHeaders } from '@kb/telemetry';
import type { Span } from '@opentelemetry/api';
import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { randomUUID } from 'node:crypto';
import type { Principal } from '../accounts/accounts.service';

/** Per-request state the gateway attaches to the Fastify request. */
export interface GatewayRequestState {
  principal?: Principal;
  /** The request's tracing SERVER span (absent for probes). */
  span?: Span;
}
export type GatewayRequest = FastifyRequest & { kb?: GatewayRequestState };

const REQUEST_ID_MAX = 128;
const REQUEST_ID_RE = /^[\x21-\x7e]+$/;

/**
 * Request id of an incoming request: the client's `X-Request-Id` when it is 1–128 printable
 * ASCII characters (decisions.md "Request id"), otherwise a new UUID.
 */
export function requestIdFor(headerValue: string | string[] | undefined): string {
  const v = Array.isArray(headerValue) ? headerValue[0] : headerValue;
  return v && v.length <= REQUEST_ID_MAX && REQUEST_ID_RE.test(v) ? v : randomUUID();
}

/** Injects the CallContext (org of the API key, request id, the key as audit actor) of the current request. */
export const Ctx = createParamDecorator((_: unknown, context: ExecutionContext): CallContext => {
  const req = context.switchToHttp().getRequest<GatewayRequest>();
  const span = req.kb?.span;
  const principal = req.kb?.principal;
  return {
    orgId: principal?.orgId ?? '',
    requestId: String(req.id),
    ...(principal ? { actor: { apiKeyId: principal.keyId, apiKeyName: principal.keyName } } : {}),
    ...(span ? { trace: traceHeaders(span) } : {}),
  };
});

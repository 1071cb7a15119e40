import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { map, Observable } from 'rxjs';

/** A page of a list endpoint: becomes `data` + `pagination` in the envelope (service-api.md §1). */
export class Paginated<T> {
  constructor(
    readonly items: T[],
    readonly pagination: { limit: number; offset: number; total: number },
  ) {}
}

/** A response the handler has already written itself (SSE, CSV): left untouched. */
export const RAW_RESPONSE = Symbol('raw-response');

/** Builds the error envelope (service-api.md §1). */
export function errorEnvelope(code: string, message: string, requestId: string) {
  return { success: false as const, error: { code, message }, request_id: requestId };
}

/**
 * Wraps every handler result in the success envelope `{ success, data, request_id }`, adding
 * `pagination` for Paginated results. 204 responses stay empty.
 */
@Injectable()
export class EnvelopeInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return next.handle().pipe(envelope(context));
  }
}

/** The rxjs operator of EnvelopeInterceptor (wraps a handler's result in the success envelope). */
export function envelope(context: ExecutionContext) {
  const http = context.switchToHttp();
  const request = http.getRequest<FastifyRequest>();
  const reply = http.getResponse<FastifyReply>();
  return map((result: unknown) => {
    if (result === RAW_RESPONSE || reply.statusCode === 204) return undefined;
    const request_id = String(request.id);
    if (result instanceof Paginated) {
      return { success: true, data: result.items, pagination: result.pagination, request_id };
    }
    return { success: true, data: result, request_id };
  });
}

import { AppError, ErrorCode } from '@kb/common';
import { CallHandler, ExecutionContext, Inject, Injectable, NestInterceptor } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { Observable } from 'rxjs';
import { GATEWAY_CONFIG } from './tokens';

/** Gateway settings the interceptors read. */
export interface GatewayHttpConfig {
  /** A handler that has not started its response after this long → 504 TIMEOUT (ms). */
  requestTimeoutMs: number;
}

/**
 * Answers 504 TIMEOUT when a handler has produced nothing after `requestTimeoutMs`. A response
 * that has already started (an SSE stream, a CSV download) is never cut: the timeout only guards
 * the wait for the first byte. The abandoned handler's result is dropped.
 */
@Injectable()
export class TimeoutInterceptor implements NestInterceptor {
  constructor(@Inject(GATEWAY_CONFIG) private readonly config: GatewayHttpConfig) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return this.around(context, next.handle());
  }

  /** `source` with the timeout applied. */
  around(context: ExecutionContext, source: Observable<unknown>): Observable<unknown> {
    const reply = context.switchToHttp().getResponse<FastifyReply>();
    const ms = this.config.requestTimeoutMs;
    return new Observable((subscriber) => {
      const timer = setTimeout(() => {
        if (reply.sent || reply.raw.headersSent) return;
        subscription.unsubscribe();
        subscriber.error(new AppError(ErrorCode.TIMEOUT, `The request did not complete within ${Math.round(ms / 1000)} seconds. Retry later.`));
      }, ms);
      const subscription = source.subscribe({
        next: (v) => subscriber.next(v),
        error: (e) => {
          clearTimeout(timer);
          subscriber.error(e);
        },
        complete: () => {
          clearTimeout(timer);
          subscriber.complete();
        },
      });
      return () => {
        clearTimeout(timer);
        subscription.unsubscribe();
      };
    });
  }
}

import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { Observable } from 'rxjs';
import { envelope } from './envelope';
import { IdempotencyInterceptor } from './idempotency';
import { TimeoutInterceptor } from './timeout';

/**
 * The gateway's one global interceptor: timeout (outermost) → idempotency → envelope (innermost),
 * i.e. idempotency stores the final envelope and the timeout covers the whole handling. Composed in
 * one interceptor because Nest wraps every global interceptor in its own async-context binding per
 * request, a measurable cost on the hot path (docs/gateway.md "Benchmark").
 */
@Injectable()
export class GatewayInterceptor implements NestInterceptor {
  constructor(
    private readonly timeout: TimeoutInterceptor,
    private readonly idempotency: IdempotencyInterceptor,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return this.timeout.around(context, this.idempotency.around(context, () => next.handle().pipe(envelope(context))));
  }
}

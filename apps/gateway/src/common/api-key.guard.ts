import { AppError, ErrorCode } from '@kb/common';
import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { GatewayRequest, IS_PUBLIC } from './http-context';

/**
 * Second line of defence behind the admission hook (request-policy.ts), which authenticates the
 * API key, applies rate limits and quotas before routing: a non-public handler never runs without
 * an authenticated principal on the request.
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  /** `@Public()` of each handler, read once (metadata lookups per request show in profiles). */
  private readonly publicHandlers = new WeakMap<object, boolean>();

  constructor(private readonly reflector: Reflector) {}

  canActivate(context: ExecutionContext): boolean {
    const handler = context.getHandler();
    let isPublic = this.publicHandlers.get(handler);
    if (isPublic === undefined) {
      isPublic = this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, [handler, context.getClass()]) === true;
      this.publicHandlers.set(handler, isPublic);
    }
    if (isPublic) return true;
    const req = context.switchToHttp().getRequest<GatewayRequest>();
    if (!req.kb?.principal) throw new AppError(ErrorCode.UNAUTHORIZED, 'Missing API key: send the header Authorization: Bearer <API_KEY>.');
    return true;
  }
}

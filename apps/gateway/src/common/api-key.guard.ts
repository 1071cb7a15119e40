import { AppError, ErrorCode } from '@kb/common';
import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { GatewayRequest } from './http-context';
import { isPublicPath } from './request-policy';

/**
 * Second line of defence behind the admission hook (request-policy.ts), which authenticates the
 * API key, applies rate limits and quotas before routing: a handler outside the public routes
 * (`PUBLIC_ROUTES`, the same list the hook reads) never runs without an authenticated principal.
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<GatewayRequest>();
    if (req.kb?.principal || isPublicPath(req.url)) return true;
    throw new AppError(ErrorCode.UNAUTHORIZED, 'Missing API key: send the header Authorization: Bearer <API_KEY>.');
  }
}

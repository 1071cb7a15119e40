import { AppError, ErrorCode } from '@kb/common';
import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AccountsService } from '../accounts/accounts.service';
import { GatewayRequest, IS_PUBLIC } from './http-context';
import { ACCOUNTS } from './tokens';

/**
 * Authenticates `Authorization: Bearer <API_KEY>` (service-api.md §5) to an organization.
 * Missing, malformed, unknown or revoked keys → 401 UNAUTHORIZED.
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    @Inject(ACCOUNTS) private readonly accounts: AccountsService,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, [context.getHandler(), context.getClass()])) return true;
    const req = context.switchToHttp().getRequest<GatewayRequest>();
    const header = req.headers.authorization;
    const match = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    if (!match) throw new AppError(ErrorCode.UNAUTHORIZED, 'Missing API key: send the header Authorization: Bearer <API_KEY>.');
    const principal = await this.accounts.authenticate(match[1]);
    if (!principal) throw new AppError(ErrorCode.UNAUTHORIZED, 'Invalid or revoked API key.');
    req.kb = { ...(req.kb ?? {}), principal };
    return true;
  }
}

import { AppError, ErrorCode } from '@kb/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AccountsService } from '../accounts/accounts.service';
import type { UsageService } from '../usage/usage.service';
import type { GatewayRequest } from './http-context';
import { RateLimiter } from './rate-limit';

/** Paths served without an API key: health, the API reference, presigned storage URLs. */
export function isPublicPath(url: string): boolean {
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  return path === '/healthz' || path === '/readyz' || path === '/docs' || path.startsWith('/docs/') || path.startsWith('/storage/');
}

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/**
 * The gateway's admission policy, run as a Fastify `onRequest` hook before routing, body parsing
 * and validation for every request outside the public paths (`isPublicPath`, checked by the
 * caller), including unknown routes and bodies that turn out malformed or too large:
 * 1. API key (service-api.md §5) → 401 UNAUTHORIZED when missing, unknown or revoked.
 * 2. Per-key rate limit (fixed one-minute window) → `X-RateLimit-Limit/Remaining/Reset` on the
 *    response whatever its status; 429 RATE_LIMITED with `Retry-After` when exhausted.
 * 3. Monthly quotas of the organization → 402 QUOTA_EXCEEDED.
 * The authenticated principal is attached to the request (`request.kb.principal`).
 */
export function createRequestPolicy(deps: { accounts: AccountsService; rateLimiter: RateLimiter; usage: UsageService; now?: () => number }) {
  const now = deps.now ?? Date.now;
  return async function requestPolicy(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    if (request.method === 'OPTIONS') return;
    const header = request.headers.authorization;
    const match = typeof header === 'string' ? BEARER.exec(header) : null;
    if (!match) throw new AppError(ErrorCode.UNAUTHORIZED, 'Missing API key: send the header Authorization: Bearer <API_KEY>.');
    const principal = await deps.accounts.authenticate(match[1]);
    if (!principal) throw new AppError(ErrorCode.UNAUTHORIZED, 'Invalid or revoked API key.');
    const req = request as GatewayRequest;
    (req.kb ??= {}).principal = principal;

    const state = await deps.rateLimiter.consume(principal.keyId, principal.rateLimitPerMinute);
    reply.headers({ 'x-ratelimit-limit': state.limit, 'x-ratelimit-remaining': state.remaining, 'x-ratelimit-reset': state.reset });
    if (!state.allowed) {
      const nowMs = now();
      reply.header('retry-after', Math.max(1, state.reset - Math.floor(nowMs / 1000)));
      throw RateLimiter.tooMany(state, nowMs);
    }
    await deps.usage.admitRequest(principal);
  };
}

import { AppError, ErrorCode } from '@kb/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AccountsService } from '../accounts/accounts.service';
import type { UsageService } from '../usage/usage.service';
import type { GatewayRequest } from './http-context';
import { RateLimiter } from './rate-limit';

/**
 * What a public route serves (it decides its headers and body handling in gateway.ts):
 * - `probe`: health probes, answered like the API (its security headers, no tracing span);
 * - `reference`: the browsable API reference and its OpenAPI document (no CSP: the UI loads scripts);
 * - `storage`: presigned URLs of the local storage driver, whose signature is the authorization;
 * - `workspace`: the review workspace's static files at /app/ (its own CSP; the app's API calls carry a key).
 */
export type PublicRouteKind = 'probe' | 'reference' | 'storage' | 'workspace';

/** One entry of {@link PUBLIC_ROUTES}: an exact path, or (`prefix`) every path starting with it. */
export interface PublicRoute {
  path: string;
  prefix: boolean;
  kind: PublicRouteKind;
}

/**
 * The one definition of the routes served without an API key (service-api.md §5): the admission
 * hook, the body checks, the `Expect: 100-continue` answer and the API-key guard of Nest handlers
 * all ask {@link publicRouteOf}; everything else (including unknown paths) needs a key.
 */
export const PUBLIC_ROUTES: readonly PublicRoute[] = [
  { path: '/healthz', prefix: false, kind: 'probe' },
  { path: '/readyz', prefix: false, kind: 'probe' },
  { path: '/docs', prefix: false, kind: 'reference' },
  { path: '/docs/', prefix: true, kind: 'reference' },
  { path: '/storage/', prefix: true, kind: 'storage' },
  { path: '/app', prefix: false, kind: 'workspace' },
  { path: '/app/', prefix: true, kind: 'workspace' },
];

/**
 * The public route a request URL (path, with or without its query string) falls under, or
 * `undefined` when the request needs an API key (`/docs` and `/docs/openapi.json` are public,
 * `/docs-x` is not).
 */
export function publicRouteOf(url: string): PublicRoute | undefined {
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  for (const route of PUBLIC_ROUTES) {
    if (route.prefix ? path.startsWith(route.path) : path === route.path) return route;
  }
  return undefined;
}

/** Whether a request URL is served without an API key ({@link PUBLIC_ROUTES}). */
export function isPublicPath(url: string): boolean {
  return publicRouteOf(url) !== undefined;
}

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/**
 * The gateway's admission policy, run as a Fastify `onRequest` hook before routing, body parsing
 * and validation for every request outside the public routes (`PUBLIC_ROUTES`, checked by the
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

import { ErrorCode, Logger, storageConfigFromEnv } from '@kb/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { errorEnvelope } from './common/envelope';
import { securityHeaders } from './common/security-headers';

/**
 * The review workspace (issue 31; decisions.md "Review workspace"): the browser app built by
 * `node tools/build.mjs` into dist/web (Vite, `base: '/app/'`), served by the gateway as static
 * files at {@link WORKSPACE_PATH}, without an API key (the app's API calls carry the key the person
 * signs in with). The serving rules are in docs/gateway.md "Review workspace".
 */
export const WORKSPACE_PATH = '/app/';

/** Cache-Control of Vite's content-hashed files under /app/assets/: a year (RFC 9111 §5.2.2.1), never revalidated (RFC 8246). */
export const IMMUTABLE_CACHE = 'public, max-age=31536000, immutable';
/** Cache-Control of index.html and the app's other unhashed files: stored, but revalidated (ETag) at every use. */
export const REVALIDATE_CACHE = 'no-cache';

/**
 * Where the built workspace is when GATEWAY_WORKSPACE_DIR is unset: dist/web next to the built
 * gateway (this file compiles to dist/apps/gateway/src/workspace.js). In the Docker image that is
 * /app/dist/web.
 */
export function defaultWorkspaceDir(): string {
  return path.resolve(__dirname, '../../../web');
}

type StorageConfig = ReturnType<typeof storageConfigFromEnv>;

/**
 * The origin (`scheme://host[:port]`) the browser fetches presigned storage URLs from: the local
 * driver's PUBLIC_BASE_URL (its `/storage/v1/…` URLs), or for S3 the public endpoint the URLs are
 * signed for (S3_PUBLIC_ENDPOINT, else S3_ENDPOINT/S3_PORT with S3_USE_SSL's scheme; path-style
 * URLs, so the bucket is in the path, not the host).
 * @returns the origin, or null when the configured value is not a usable URL or host (the
 * storage driver itself refuses such a value at startup).
 */
export function storageOrigin(storage: StorageConfig): string | null {
  const originOf = (url: string): string | null => {
    try {
      const u = new URL(url);
      return /^https?:$/.test(u.protocol) ? u.origin : null;
    } catch {
      return null;
    }
  };
  if (storage.driver === 'local') return originOf(storage.local.publicBaseUrl);
  const scheme = storage.s3.useSSL ? 'https' : 'http';
  const endpoint = storage.s3.publicEndpoint?.trim();
  if (endpoint) return originOf(/^https?:\/\//i.test(endpoint) ? endpoint : `${scheme}://${endpoint}`);
  return originOf(`${scheme}://${storage.s3.endPoint}${storage.s3.port ? `:${storage.s3.port}` : ''}`);
}

/**
 * The Content-Security-Policy directives of the workspace's files. What the app needs and why:
 * - scripts, styles, fonts, the web manifest: its own origin (`'self'`); inline `<style>` elements
 *   too (`'unsafe-inline'` for styles only: Mantine writes its CSS variables in a `<style>` element);
 *   `'wasm-unsafe-eval'` lets pdf.js compile its WebAssembly image decoders (no string eval);
 * - workers: `'self'` (pdf.js's worker file) and `blob:`;
 * - images: `'self'`, `data:` and `blob:` (rendered PDF pages, icons);
 * - connect: `'self'` (the API) and the storage origin of presigned URLs ({@link storageOrigin});
 * - nothing else: no plugins, no framing by other sites, forms and `<base>` only to itself.
 * @returns directive name → sources, for helmet's contentSecurityPolicy.
 */
export function workspaceCspDirectives(storage: StorageConfig): Record<string, string[]> {
  const files = storageOrigin(storage);
  return {
    'default-src': ["'self'"],
    'script-src': ["'self'", "'wasm-unsafe-eval'"],
    'style-src': ["'self'", "'unsafe-inline'"],
    'img-src': ["'self'", 'data:', 'blob:'],
    'font-src': ["'self'", 'data:'],
    'worker-src': ["'self'", 'blob:'],
    'connect-src': ["'self'", ...(files ? [files] : [])],
    'object-src': ["'none'"],
    'base-uri': ["'self'"],
    'form-action': ["'self'"],
    'frame-ancestors': ["'none'"],
  };
}

/**
 * The security headers of every response under /app/ (set by the gateway's admission hook, once
 * computed): helmet's defaults as for the API reference (nosniff, HSTS, no referrer, same-site
 * resources, frame denial) plus the workspace's CSP ({@link workspaceCspDirectives}).
 * `upgrade-insecure-requests` is left out: a stack served over plain HTTP (`npm start`, a LAN
 * address) would have every request of the app rewritten to https and fail.
 * @returns lower-case header name → value.
 */
export function workspaceSecurityHeaders(storage: StorageConfig): Record<string, string> {
  return securityHeaders({
    contentSecurityPolicy: { useDefaults: false, directives: workspaceCspDirectives(storage) },
    crossOriginResourcePolicy: { policy: 'same-site' },
  });
}

/** Whether a path under /app/ names a client route of the app (no file extension in its last segment, not under assets/). */
function isClientRoute(relative: string): boolean {
  if (relative === 'assets' || relative.startsWith('assets/')) return false;
  const last = relative.slice(relative.lastIndexOf('/') + 1);
  return !last.includes('.');
}

/**
 * Mounts the review workspace at /app/ from `dir` (GATEWAY_WORKSPACE_DIR, default
 * {@link defaultWorkspaceDir}):
 * - `GET /app` → 301 to `/app/` (query string kept);
 * - `GET /app/` and any client route (`/app/projects/x`: no file extension) → index.html,
 *   `Cache-Control: no-cache` (the app routes in the browser);
 * - `GET /app/assets/*` → Vite's content-hashed files, cached for a year as immutable;
 *   other files of `dir` (index.html, favicon…) → `no-cache`; ETag and Last-Modified on all;
 * - a missing file, a path under assets/ or any other method → 404 NOT_FOUND in the error envelope.
 * When `dir` has no index.html (the app was not built) the gateway still starts: every /app/ path
 * answers 404 NOT_FOUND saying so, and a warning is logged once.
 * HEAD is answered like GET. Paths are resolved by @fastify/static (no `..`, no dotfiles).
 * @fastify/static is loaded here, on first use: its dependencies are ES modules, which Jest's
 * CommonJS loader cannot require (in-process tests pass `serveWorkspace: false`).
 */
export async function mountWorkspace(fastify: import('fastify').FastifyInstance, dir: string, logger: Logger): Promise<void> {
  const root = path.resolve(dir);
  const built = existsSync(path.join(root, 'index.html'));
  if (!built)
    logger.warn({ dir: root }, 'review workspace not built (no index.html): /app/ answers 404 until `node tools/build.mjs` builds it into that directory');
  const notFound = (request: FastifyRequest, reply: FastifyReply, message: string) =>
    reply
      .status(404)
      .header('cache-control', 'no-store')
      .send(errorEnvelope(ErrorCode.NOT_FOUND, message, String(request.id)));
  const notBuilt =
    'The review workspace is not built on this server: build it with `node tools/build.mjs` (dist/web) or point GATEWAY_WORKSPACE_DIR at a built copy.';
  const fastifyStatic = built ? (await import('@fastify/static')).default : undefined;
  await fastify.register(
    async (scope) => {
      scope.get('/', { prefixTrailingSlash: 'no-slash' }, (request, reply) => {
        const q = request.url.indexOf('?');
        return reply.redirect(`${WORKSPACE_PATH}${q === -1 ? '' : request.url.slice(q)}`, 301);
      });
      if (!fastifyStatic) {
        scope.setNotFoundHandler((request, reply) => notFound(request, reply, notBuilt));
        scope.get('/*', (request, reply) => notFound(request, reply, notBuilt));
        return;
      }
      await scope.register(fastifyStatic, {
        root,
        prefix: '/',
        wildcard: true,
        index: false,
        redirect: false,
        dotfiles: 'ignore',
        cacheControl: false,
        setHeaders: (reply, file) => {
          const relative = path.relative(root, file).split(path.sep).join('/');
          reply.header('cache-control', relative.startsWith('assets/') ? IMMUTABLE_CACHE : REVALIDATE_CACHE);
        },
      });
      const index = (reply: FastifyReply) => reply.header('cache-control', REVALIDATE_CACHE).sendFile('index.html');
      scope.get('/', { prefixTrailingSlash: 'slash' }, (_request, reply) => index(reply));
      // Files of `dir` are tried first (the wildcard route); what is not there ends here.
      scope.setNotFoundHandler((request, reply) => {
        const q = request.url.indexOf('?');
        const relative = (q === -1 ? request.url : request.url.slice(0, q)).slice(WORKSPACE_PATH.length);
        if ((request.method === 'GET' || request.method === 'HEAD') && request.url.startsWith(WORKSPACE_PATH) && isClientRoute(relative)) return index(reply);
        return notFound(request, reply, `No such file in the review workspace: ${request.method} ${request.url.slice(0, 200)}.`);
      });
    },
    { prefix: WORKSPACE_PATH.slice(0, -1) },
  );
}

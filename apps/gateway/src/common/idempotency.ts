import { AppError, Logger } from '@kb/common';
import { CallHandler, ExecutionContext, Inject, Injectable, NestInterceptor } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { createHash } from 'node:crypto';
import { catchError, from, mergeMap, Observable, of, throwError } from 'rxjs';
import { DataSource } from 'typeorm';
import { RAW_RESPONSE } from './envelope';
import { toHttpError } from './error.filter';
import { GatewayRequest } from './http-context';
import { GATEWAY_DATABASE, LOGGER } from './tokens';

/** Longest accepted `Idempotency-Key` (decisions.md "Idempotency"). */
export const IDEMPOTENCY_KEY_MAX = 255;
/** How long a key and its response are kept (decisions.md: 24 h). */
export const IDEMPOTENCY_TTL_HOURS = 24;
/**
 * A first request still marked in flight after this long is considered abandoned (its gateway
 * died) and the key may be claimed again. Longer than the slowest synchronous call (verify: 5 min).
 */
export const IDEMPOTENCY_ABANDONED_MINUTES = 10;

/** JSON with object keys sorted, so `{a,b}` and `{b,a}` hash alike. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value as object)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** SHA-256 fingerprint of a request: method, path with query, canonical JSON body. */
export function requestFingerprint(method: string, url: string, body: unknown): string {
  return createHash('sha256').update(`${method}\n${url}\n${canonicalJson(body ?? null)}`).digest('hex');
}

/**
 * Idempotency keys on every POST (decisions.md "Idempotency"): `Idempotency-Key` (1–255 printable
 * characters), scoped per organization, kept 24 h in `gateway.idempotency_keys`.
 * - First request: the key is claimed atomically (`INSERT … ON CONFLICT`), the handler runs and
 *   its final status and envelope are stored.
 * - Same key, same method/path/body, completed → the stored response is replayed with
 *   `Idempotent-Replayed: true` (its `request_id` is the replaying request's id).
 * - Same key with a different method, path or body → 409 CONFLICT; while the first is still
 *   running → 409 CONFLICT.
 * - Client errors (4xx) are stored and replayed like successes; server-side failures (5xx:
 *   unavailable, timeout, internal) release the key, so a retry runs again.
 * - Responses the handler writes itself (chat with `stream: true` as text/event-stream) cannot be
 *   replayed: the key is released when the stream ends, and a retry runs again.
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  constructor(
    @Inject(GATEWAY_DATABASE) private readonly db: DataSource,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return this.around(context, () => next.handle());
  }

  /** The idempotency logic around `handle` (the enveloped handler result). */
  around(context: ExecutionContext, handle: () => Observable<unknown>): Observable<unknown> {
    const http = context.switchToHttp();
    const request = http.getRequest<GatewayRequest>();
    const reply = http.getResponse<FastifyReply>();
    const raw = request.headers['idempotency-key'];
    if (request.method !== 'POST' || raw === undefined) return handle();
    const key = Array.isArray(raw) ? raw[0] : raw;
    if (!key || key.length > IDEMPOTENCY_KEY_MAX || !/^[\x20-\x7e]+$/.test(key)) {
      return throwError(() => AppError.validation(`Idempotency-Key must be 1 to ${IDEMPOTENCY_KEY_MAX} printable ASCII characters.`));
    }
    const orgId = request.kb?.principal?.orgId;
    if (!orgId) return handle();
    const fingerprint = requestFingerprint(request.method, request.url, request.body);
    return from(this.claim(orgId, key, request.method, request.url, fingerprint)).pipe(
      mergeMap((claim) => {
        if (claim.kind === 'replay') {
          reply.header('Idempotent-Replayed', 'true');
          reply.status(claim.status);
          const body = claim.body && typeof claim.body === 'object' ? { ...(claim.body as object), request_id: String(request.id) } : claim.body;
          // Sent as is: the stored body is already the final envelope.
          void reply.send(body);
          return of(RAW_RESPONSE);
        }
        return handle().pipe(
          mergeMap((result) => from(this.complete(orgId, key, reply, result)).pipe(mergeMap(() => of(result)))),
          catchError((error) => from(this.fail(orgId, key, request, error)).pipe(mergeMap(() => throwError(() => error)))),
        );
      }),
    );
  }

  private async claim(orgId: string, key: string, method: string, path: string, fingerprint: string): Promise<{ kind: 'run' } | { kind: 'replay'; status: number; body: unknown }> {
    const claimed: unknown[] = await this.db.query(
      `INSERT INTO idempotency_keys (org_id, key, method, path, request_hash, state, created_at)
       VALUES ($1, $2, $3, $4, $5, 'in_flight', now())
       ON CONFLICT (org_id, key) DO UPDATE
         SET method = EXCLUDED.method, path = EXCLUDED.path, request_hash = EXCLUDED.request_hash,
             state = 'in_flight', response_status = NULL, response_body = NULL, created_at = now()
         WHERE idempotency_keys.created_at < now() - make_interval(hours => $6)
            OR (idempotency_keys.state = 'in_flight' AND idempotency_keys.created_at < now() - make_interval(mins => $7))
       RETURNING key`,
      [orgId, key, method, path.slice(0, 2000), fingerprint, IDEMPOTENCY_TTL_HOURS, IDEMPOTENCY_ABANDONED_MINUTES],
    );
    if (claimed.length > 0) return { kind: 'run' };
    const rows: Array<{ request_hash: string; state: string; response_status: number | null; response_body: unknown }> = await this.db.query(
      `SELECT request_hash, state, response_status, response_body FROM idempotency_keys WHERE org_id = $1 AND key = $2`,
      [orgId, key],
    );
    const row = rows[0];
    if (!row) return this.claim(orgId, key, method, path, fingerprint); // released in between: try again
    if (row.request_hash !== fingerprint) {
      throw AppError.conflict('This Idempotency-Key was already used with a different request (method, path or body). Use a new key for a new request.');
    }
    if (row.state !== 'completed' || row.response_status === null) {
      throw AppError.conflict('A request with this Idempotency-Key is still being processed. Retry after it completes.');
    }
    return { kind: 'replay', status: row.response_status, body: row.response_body };
  }

  private async complete(orgId: string, key: string, reply: FastifyReply, result: unknown): Promise<void> {
    if (result === RAW_RESPONSE || (reply.sent && result === undefined)) {
      await this.release(orgId, key);
      return;
    }
    // `result` is the final envelope (this interceptor runs outside EnvelopeInterceptor).
    await this.db
      .query(`UPDATE idempotency_keys SET state = 'completed', response_status = $3, response_body = $4 WHERE org_id = $1 AND key = $2`, [
        orgId,
        key,
        reply.statusCode,
        result === undefined ? null : JSON.stringify(result),
      ])
      .catch((err) => this.logger.warn({ err }, 'could not store an idempotent response; releasing the key'));
  }

  private async fail(orgId: string, key: string, request: GatewayRequest, error: unknown): Promise<void> {
    const mapped = toHttpError(error, request.method, request.url);
    if (mapped.status >= 500) {
      await this.release(orgId, key);
      return;
    }
    const envelope = { success: false, error: { code: mapped.code, message: mapped.message }, request_id: String(request.id) };
    await this.db
      .query(`UPDATE idempotency_keys SET state = 'completed', response_status = $3, response_body = $4 WHERE org_id = $1 AND key = $2`, [
        orgId,
        key,
        mapped.status,
        JSON.stringify(envelope),
      ])
      .catch(() => this.release(orgId, key));
  }

  private async release(orgId: string, key: string): Promise<void> {
    await this.db.query(`DELETE FROM idempotency_keys WHERE org_id = $1 AND key = $2`, [orgId, key]).catch(() => undefined);
  }

  /** Deletes records older than the 24 h window (called periodically). */
  static async purge(db: DataSource): Promise<void> {
    await db.query(`DELETE FROM idempotency_keys WHERE created_at < now() - make_interval(hours => $1)`, [IDEMPOTENCY_TTL_HOURS]);
  }
}

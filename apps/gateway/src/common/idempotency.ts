import { AppError, Logger, SecretBox } from '@kb/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { createHash } from 'node:crypto';
import { finalEnvelope } from './envelope';
import { GatewayRequest } from './http-context';
import { IdempotencyKeysRepository } from './idempotency.repository';

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
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** SHA-256 fingerprint of a request: method, path with query, canonical JSON body. */
export function requestFingerprint(method: string, url: string, body: unknown): string {
  return createHash('sha256')
    .update(`${method}\n${url}\n${canonicalJson(body ?? null)}`)
    .digest('hex');
}

/**
 * Routes (method and Fastify route template) whose answer holds a secret in clear: `POST
 * /api/v2/webhooks` returns the endpoint's signing secret. Their stored answer is sealed with
 * AES-256-GCM ({@link SecretBox}, WEBHOOK_SECRET_KEY) so the 24 h idempotency table never holds it
 * in clear, and opened again to be replayed.
 */
export const SEALED_ROUTES = new Set(['POST /api/v2/webhooks']);
/** Key of the stored JSON `{ "kb_sealed_v1": "<SecretBox text of the response body>" }`. */
const SEALED = 'kb_sealed_v1';

/** State of a request that claimed an idempotency key (set by `preHandler`). */
interface Claimed {
  orgId: string;
  key: string;
  /** True once the response was stored or the key released. */
  settled: boolean;
}
/** Request property holding the claim (declared on Fastify's requests by createGateway). */
export const IDEMPOTENCY_CLAIM = Symbol('idempotency-claim');
type ClaimingRequest = FastifyRequest & { [IDEMPOTENCY_CLAIM]?: Claimed | null };

/**
 * Idempotency keys on every POST (decisions.md "Idempotency"): `Idempotency-Key` (1–255 printable
 * characters), scoped per organization, kept 24 h in `gateway.idempotency_keys` (through
 * {@link IdempotencyKeysRepository}; older keys are purged periodically). Runs as Fastify
 * hooks (installed by createGateway), so requests without a key pay one header lookup:
 * - `preHandler` (after body parsing and validation of the JSON shape): the key is claimed
 *   atomically (`INSERT … ON CONFLICT`); same key, same method/path/body, completed → the stored
 *   response is replayed with `Idempotent-Replayed: true` (its `request_id` is the replaying
 *   request's id) and the handler does not run; a different method, path or body → 409 CONFLICT;
 *   the first request still running → 409 CONFLICT.
 * - `onSend`: the final status and JSON envelope are stored (sealed for {@link SEALED_ROUTES}). Client errors (4xx) are stored and
 *   replayed like successes; server-side failures (5xx: unavailable, timeout, internal) release
 *   the key, so a retry runs again.
 * - `onResponse`: a key whose response was not a JSON body (chat with `stream: true` as
 *   text/event-stream) is released when the response ends: a retry runs again.
 */
export class Idempotency {
  /**
   * @param sealer seals the stored answers of {@link SEALED_ROUTES}; null: those answers are not
   *   stored at all (the key is released, so a retry runs the request again).
   */
  constructor(
    private readonly keys: IdempotencyKeysRepository,
    private readonly logger: Logger,
    private readonly sealer: SecretBox | null = null,
  ) {}

  /**
   * Fastify `preHandler` hook.
   * @throws AppError VALIDATION_ERROR for a malformed key, CONFLICT for a reused or in-flight key.
   */
  async preHandler(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    if (request.method !== 'POST') return;
    const raw = request.headers['idempotency-key'];
    if (raw === undefined) return;
    const key = Array.isArray(raw) ? raw[0] : raw;
    if (!key || key.length > IDEMPOTENCY_KEY_MAX || !/^[\x20-\x7e]+$/.test(key)) {
      throw AppError.validation(`Idempotency-Key must be 1 to ${IDEMPOTENCY_KEY_MAX} printable ASCII characters.`);
    }
    const orgId = (request as GatewayRequest).kb?.principal?.orgId;
    if (!orgId) return;
    const fingerprint = requestFingerprint(request.method, request.url, request.body);
    const claim = await this.claim(orgId, key, request.method, request.url, fingerprint);
    if (claim.kind === 'replay') {
      const body = claim.body && typeof claim.body === 'object' ? finalEnvelope({ ...claim.body, request_id: String(request.id) }) : claim.body;
      await reply.header('Idempotent-Replayed', 'true').status(claim.status).send(body);
      return;
    }
    (request as ClaimingRequest)[IDEMPOTENCY_CLAIM] = { orgId, key, settled: false };
  }

  /** True while `request` holds a claimed key whose response is not stored or released yet. */
  claimed(request: FastifyRequest): boolean {
    const claim = (request as ClaimingRequest)[IDEMPOTENCY_CLAIM];
    return claim != null && !claim.settled;
  }

  /** Fastify `onSend` hook: stores the JSON response of a claimed key (or releases it on 5xx). */
  async onSend(request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<void> {
    const claim = (request as ClaimingRequest)[IDEMPOTENCY_CLAIM];
    if (!claim || claim.settled || typeof payload !== 'string') return;
    claim.settled = true;
    if (reply.statusCode >= 500 || !String(reply.getHeader('content-type') ?? '').startsWith('application/json')) {
      await this.release(claim);
      return;
    }
    let stored = payload;
    if (SEALED_ROUTES.has(`${request.method} ${request.routeOptions.url}`)) {
      if (!this.sealer) {
        await this.release(claim);
        return;
      }
      stored = JSON.stringify({ [SEALED]: this.sealer.seal(payload) });
    }
    await this.keys.complete(claim.orgId, claim.key, reply.statusCode, stored).catch(async (err) => {
      this.logger.warn({ err }, 'could not store an idempotent response; releasing the key');
      await this.release(claim);
    });
  }

  /** Fastify `onResponse` hook: releases a key whose response was streamed or never stored. */
  async onResponse(request: FastifyRequest): Promise<void> {
    const claim = (request as ClaimingRequest)[IDEMPOTENCY_CLAIM];
    if (!claim || claim.settled) return;
    claim.settled = true;
    await this.release(claim);
  }

  private async claim(
    orgId: string,
    key: string,
    method: string,
    path: string,
    fingerprint: string,
  ): Promise<{ kind: 'run' } | { kind: 'replay'; status: number; body: unknown }> {
    const claimed = await this.keys.claim(
      orgId,
      key,
      { method, path: path.slice(0, 2000), hash: fingerprint },
      { ttlHours: IDEMPOTENCY_TTL_HOURS, abandonedMinutes: IDEMPOTENCY_ABANDONED_MINUTES },
    );
    if (claimed) return { kind: 'run' };
    const row = await this.keys.find(orgId, key);
    if (!row) return this.claim(orgId, key, method, path, fingerprint); // released in between: try again
    if (row.request_hash !== fingerprint) {
      throw AppError.conflict('This Idempotency-Key was already used with a different request (method, path or body). Use a new key for a new request.');
    }
    if (row.state !== 'completed' || row.response_status === null) {
      throw AppError.conflict('A request with this Idempotency-Key is still being processed. Retry after it completes.');
    }
    return { kind: 'replay', status: row.response_status, body: this.unseal(row.response_body) };
  }

  /** A stored body as it was sent: sealed ones opened ({@link SEALED_ROUTES}). @throws AppError CONFLICT when it cannot be opened (WEBHOOK_SECRET_KEY changed). */
  private unseal(body: unknown): unknown {
    const sealed = body && typeof body === 'object' ? (body as Record<string, unknown>)[SEALED] : undefined;
    if (typeof sealed !== 'string') return body;
    try {
      if (!this.sealer) throw new Error('WEBHOOK_SECRET_KEY is not set');
      return JSON.parse(this.sealer.open(sealed));
    } catch (err) {
      this.logger.warn({ err }, 'a sealed idempotent response cannot be opened');
      throw AppError.conflict(
        'The response of the first request with this Idempotency-Key cannot be replayed (the server key changed). Use a new key; list the endpoints to find the one the first request created.',
      );
    }
  }

  private async release(claim: Claimed): Promise<void> {
    await this.keys.release(claim.orgId, claim.key).catch(() => undefined);
  }
}

/** A page of a list endpoint: becomes `data` + `pagination` in the envelope (service-api.md §1). */
export class Paginated<T> {
  constructor(
    readonly items: T[],
    readonly pagination: { limit: number; offset: number; total: number },
  ) {}
}

/** A response the handler has already written itself (SSE, CSV, its own envelope): left untouched. */
export const RAW_RESPONSE = Symbol('raw-response');

/** Marks a body that is already a complete envelope (never wrapped again). */
const ENVELOPED = Symbol('enveloped');

/**
 * Marks `body` as a complete envelope, so the envelope hook sends it as is. The mark is a symbol
 * property: invisible to JSON serialization.
 * @returns `body` itself.
 */
export function finalEnvelope<T extends object>(body: T): T {
  Object.defineProperty(body, ENVELOPED, { value: true, enumerable: false });
  return body;
}

/** Builds the error envelope (service-api.md §1), marked final. */
export function errorEnvelope(code: string, message: string, requestId: string) {
  return finalEnvelope({ success: false as const, error: { code, message }, request_id: requestId });
}

/**
 * The success envelope `{ success, data, request_id }` (service-api.md §1) of a handler's result,
 * with `pagination` for a Paginated result. A body already marked final (error envelopes, replays,
 * bodies a handler built itself) is returned unchanged. Runs as Fastify's `preSerialization` hook,
 * which sees object payloads only (strings, buffers and streams pass by it); 204 responses have no
 * payload.
 */
export function envelopeOf(payload: unknown, requestId: string): unknown {
  if (payload !== null && typeof payload === 'object' && (payload as { [ENVELOPED]?: boolean })[ENVELOPED]) return payload;
  if (payload instanceof Paginated) return { success: true, data: payload.items, pagination: payload.pagination, request_id: requestId };
  return { success: true, data: payload, request_id: requestId };
}

// No Node built-ins: the endpoint helpers and verifyWebhook run in Node, browsers and workers
// (standardwebhooks hashes with pure-JS SHA-256; the text is decoded with TextDecoder).
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import type { KbTransport } from './transport';
import type { webhooks } from './generated/openapi';
import type { Page, PageOptions } from './paging';
import type { CreatedWebhook, CreateWebhook, UpdateWebhook, WebhookEndpoint, WebhookDelivery } from './types';

// Page and PageOptions lived here before paging.ts: still exported from this module.
export type { Page, PageOptions } from './paging';

/**
 * Registers an endpoint (POST /api/v2/webhooks). The answer holds the signing `secret`
 * (`whsec_…`) **once**: keep it to verify deliveries ({@link verifyWebhook}); it cannot be read again.
 * @throws KbApiError 400 VALIDATION_ERROR for a URL that is not https (unless the operator allows http),
 *   has credentials, or names a private/loopback address (unless allowed); an unknown event type;
 *   `"*"` mixed with other types; a description over 500 characters.
 */
export async function createWebhook(kb: KbTransport, body: CreateWebhook, options: { signal?: AbortSignal } = {}): Promise<CreatedWebhook> {
  return await kb.data(kb.api.POST('/api/v2/webhooks', { body, signal: options.signal }));
}

/** The organization's endpoints, newest first, without secrets (GET /api/v2/webhooks). @throws KbApiError. */
export async function listWebhooks(kb: KbTransport, options: PageOptions = {}): Promise<Page<WebhookEndpoint>> {
  return await kb.page(kb.api.GET('/api/v2/webhooks', { params: { query: { limit: options.limit, offset: options.offset } }, signal: options.signal }));
}

/** One endpoint (GET /api/v2/webhooks/{id}). @throws KbApiError 404 for an unknown endpoint or one of another organization. */
export async function getWebhook(kb: KbTransport, id: string, options: { signal?: AbortSignal } = {}): Promise<WebhookEndpoint> {
  return await kb.data(kb.api.GET('/api/v2/webhooks/{id}', { params: { path: { id } }, signal: options.signal }));
}

/**
 * Changes an endpoint (PATCH /api/v2/webhooks/{id}): only the given fields (`description: null`
 * clears it; `enabled: false` pauses deliveries, `true` resumes them).
 * @throws KbApiError 400 (the creation rules, or no field given), 404.
 */
export async function updateWebhook(kb: KbTransport, id: string, changes: UpdateWebhook, options: { signal?: AbortSignal } = {}): Promise<WebhookEndpoint> {
  return await kb.data(kb.api.PATCH('/api/v2/webhooks/{id}', { params: { path: { id } }, body: changes, signal: options.signal }));
}

/** Deletes an endpoint and its delivery log (DELETE /api/v2/webhooks/{id}, 204). @throws KbApiError 404. */
export async function deleteWebhook(kb: KbTransport, id: string, options: { signal?: AbortSignal } = {}): Promise<void> {
  await kb.data(kb.api.DELETE('/api/v2/webhooks/{id}', { params: { path: { id } }, signal: options.signal }));
}

/**
 * The delivery log of an endpoint, newest first (GET /api/v2/webhooks/{id}/deliveries): each
 * delivery's `status` (pending, succeeded, failed), `attempts`, `response_status`, `last_error`…
 * @throws KbApiError 404.
 */
export async function listWebhookDeliveries(kb: KbTransport, id: string, options: PageOptions = {}): Promise<Page<WebhookDelivery>> {
  return await kb.page(
    kb.api.GET('/api/v2/webhooks/{id}/deliveries', {
      params: { path: { id }, query: { limit: options.limit, offset: options.offset } },
      signal: options.signal,
    }),
  );
}

/**
 * Sends a delivery again (POST /api/v2/webhooks/{id}/deliveries/{delivery_id}/retry): it goes
 * back to `pending`, due now, with a fresh 24 h retry window (a succeeded one is sent again).
 * @returns the delivery as it is now.
 * @throws KbApiError 404 for an unknown endpoint or delivery.
 */
export async function retryWebhookDelivery(kb: KbTransport, id: string, deliveryId: string, options: { signal?: AbortSignal } = {}): Promise<WebhookDelivery> {
  return await kb.data(
    kb.api.POST('/api/v2/webhooks/{id}/deliveries/{delivery_id}/retry', { params: { path: { id, delivery_id: deliveryId } }, signal: options.signal }),
  );
}

/** The event types an endpoint can subscribe to (decisions.md "Webhooks"). */
export type WebhookEventType = WebhookDelivery['event'];

/** The body of a delivery of one event type, as the OpenAPI document's `webhooks` describes it. */
type EventBody<T extends keyof webhooks> = webhooks[T]['post']['requestBody']['content']['application/json'];

/**
 * The body of a delivery, by `type` (generated from the OpenAPI document's `webhooks`, one schema
 * per event type): `data` is the resource as its GET returns it — a {@link Document} for
 * `document.*`, a check run without `requirements` for `check_run.*` (the requirement with its
 * `review` for `check_run.requirement_reviewed`), a batch without `results` for `batch.*`. `id` is
 * the event id (also the `webhook-id` header, the same on every attempt: de-duplicate on it);
 * `created_at` the time of the state change.
 */
export type WebhookEvent = { [T in keyof webhooks]: EventBody<T> }[keyof webhooks];

/** Why {@link verifyWebhook} refused a delivery. */
export type WebhookVerificationReason = 'missing_headers' | 'bad_timestamp' | 'timestamp_too_old' | 'timestamp_too_new' | 'bad_signature' | 'bad_payload';

/** A delivery that does not verify: not signed with the secret, altered, replayed too late, or not an event. */
export class KbWebhookVerificationError extends Error {
  override readonly name = 'KbWebhookVerificationError';
  constructor(
    readonly reason: WebhookVerificationReason,
    message: string,
  ) {
    super(message);
  }
}

/** Headers as Node's `IncomingMessage.headers`, a fetch `Headers`, or a plain object (any case). */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

const REASONS: Array<[RegExp, WebhookVerificationReason, string]> = [
  [/missing required headers/i, 'missing_headers', 'missing webhook-id, webhook-timestamp or webhook-signature header'],
  [/invalid signature headers/i, 'bad_timestamp', 'webhook-timestamp is not a Unix time in seconds'],
  [/too old/i, 'timestamp_too_old', 'webhook-timestamp is more than 5 minutes in the past (a replay, or a clock off)'],
  [/too new/i, 'timestamp_too_new', 'webhook-timestamp is more than 5 minutes in the future (a clock off)'],
  [/no matching signature/i, 'bad_signature', 'no webhook-signature matches the body with this secret (another secret, or the body was altered or re-encoded)'],
];

/**
 * Verifies a delivery the service sent to your endpoint, by the Standard Webhooks specification
 * (standardwebhooks.com), with the `standardwebhooks` package the service signs with:
 * `webhook-signature` must hold `v1,<base64 HMAC-SHA256 of "webhook-id.webhook-timestamp.body">`
 * under `secret`, and `webhook-timestamp` must be within 5 minutes of now (the library's
 * tolerance; `ignoreTimestamp: true` skips that check only — for debugging a captured request,
 * never in a receiver).
 *
 * Runs anywhere (Node, browsers, workers: no Node built-in), but belongs on a server: the secret
 * must never reach a browser.
 *
 * @param payload the RAW request body, exactly as received (before any JSON parsing; bytes are read as UTF-8).
 * @param headers the request's headers (`webhook-id`, `webhook-timestamp`, `webhook-signature`).
 * @param secret the endpoint's `whsec_…` secret shown at creation.
 * @returns the event, typed by its `type`.
 * @throws KbWebhookVerificationError with a `reason`; Error for an empty or malformed secret.
 */
export function verifyWebhook(
  payload: string | Uint8Array,
  headers: WebhookHeaders,
  secret: string,
  options: { ignoreTimestamp?: boolean } = {},
): WebhookEvent {
  const flat = flattenHeaders(headers);
  const body = typeof payload === 'string' ? payload : new TextDecoder().decode(payload);
  const webhook = new Webhook(secret);
  try {
    if (options.ignoreTimestamp) {
      const id = flat['webhook-id'];
      const timestamp = flat['webhook-timestamp'];
      const signatures = flat['webhook-signature'];
      if (!id || !timestamp || !signatures) throw new WebhookVerificationError('Missing required headers');
      if (!/^\d+$/.test(timestamp)) throw new WebhookVerificationError('Invalid Signature Headers');
      // The library signs with the sender's timestamp; a match proves the secret and the body.
      const expected = webhook.sign(id, new Date(Number(timestamp) * 1000), body).split(',')[1];
      const given = signatures.split(' ').map((s) => s.split(','));
      if (!given.some(([version, signature]) => version === 'v1' && signature !== undefined && constantTimeEqual(signature, expected))) {
        throw new WebhookVerificationError('No matching signature found');
      }
    } else {
      webhook.verify(body, flat, { jsonParse: false });
    }
  } catch (error) {
    if (!(error instanceof WebhookVerificationError)) throw error;
    const known = REASONS.find(([pattern]) => pattern.test(error.message));
    throw new KbWebhookVerificationError(known?.[1] ?? 'bad_signature', known?.[2] ?? error.message);
  }
  let event: unknown;
  try {
    event = JSON.parse(body);
  } catch {
    throw new KbWebhookVerificationError('bad_payload', 'the signature matches but the body is not JSON');
  }
  const e = event as Partial<WebhookEvent> | null;
  if (!e || typeof e !== 'object' || typeof e.id !== 'string' || typeof e.type !== 'string' || typeof e.data !== 'object' || e.data === null) {
    throw new KbWebhookVerificationError('bad_payload', 'the signature matches but the body is not an event ({ id, type, created_at, org_id, data })');
  }
  return event as WebhookEvent;
}

function flattenHeaders(headers: WebhookHeaders): Record<string, string> {
  const flat: Record<string, string> = {};
  if (typeof Headers !== 'undefined' && headers instanceof Headers) {
    headers.forEach((value, name) => (flat[name.toLowerCase()] = value));
    return flat;
  }
  for (const [name, value] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (value === undefined) continue;
    flat[name.toLowerCase()] = Array.isArray(value) ? value.join(' ') : value;
  }
  return flat;
}

/**
 * Whether two signatures are equal, in a time that depends on their length only (not on where
 * they differ), as node:crypto's timingSafeEqual; written out so the module needs no Node built-in.
 */
function constantTimeEqual(a: string, b: string): boolean {
  const x = new TextEncoder().encode(a);
  const y = new TextEncoder().encode(b);
  if (x.length !== y.length) return false;
  let difference = 0;
  for (let i = 0; i < x.length; i++) difference |= x[i] ^ y[i];
  return difference === 0;
}

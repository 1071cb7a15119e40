import { AppError, CallContext, charCount, isUuid, DESCRIPTION_MAX_CHARS } from '@kb/common';
import { WEBHOOK_EVENT_TYPES } from '@kb/events';
import { randomUUID } from 'node:crypto';
import { newSigningSecret, SecretBox } from './secrets';
import { checkEndpointUrl, DestinationPolicy } from './url-policy';
import { DeliveryRow, EndpointRow, WebhooksRepository } from './webhooks.repository';

/**
 * `events` of an endpoint: 1 or more of the nine types, or exactly `["*"]` (every type, including
 * types added later). Duplicates are dropped; order is kept.
 * @throws AppError VALIDATION_ERROR naming the unknown type.
 */
export function checkEvents(events: string[]): string[] {
  if (!Array.isArray(events) || events.length === 0) throw AppError.validation(`events must list 1 or more of ${WEBHOOK_EVENT_TYPES.join(', ')}, or be ["*"].`);
  if (events.includes('*')) {
    if (events.some((e) => e !== '*')) throw AppError.validation('events: "*" (every event) cannot be combined with other event types.');
    return ['*'];
  }
  const unknown = events.find((e) => !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(e));
  if (unknown !== undefined)
    throw AppError.validation(`events: '${String(unknown).slice(0, 64)}' is not an event type; use ${WEBHOOK_EVENT_TYPES.join(', ')}, or "*".`);
  return [...new Set(events)];
}

function checkDescription(d: string | undefined | null): string | null {
  if (d === undefined || d === null) return null;
  if (charCount(d) > DESCRIPTION_MAX_CHARS) throw AppError.validation(`description must be at most ${DESCRIPTION_MAX_CHARS} characters.`);
  return d;
}

function requireUuid(value: string, what: string): string {
  if (!isUuid(value)) throw AppError.notFound(`${what} not found.`);
  return value;
}

/**
 * Use cases of webhook endpoints (decisions.md "Webhooks"): create (the secret is returned this
 * once, and stored sealed), list, get, update, delete, the delivery log and manual retry. Another
 * organization's endpoint or delivery is NOT_FOUND.
 */
export class WebhooksService {
  constructor(
    private readonly deps: { repository: WebhooksRepository; secrets: SecretBox; policy: DestinationPolicy; retryWindowMs: number; onRetry?: () => void },
  ) {}

  /**
   * Registers an endpoint, enabled, with a new signing secret (returned here only; stored sealed).
   * @throws VALIDATION_ERROR for a bad url (scheme, private address), events or description.
   */
  async create(ctx: CallContext, req: { url: string; events: string[]; description?: string | null }): Promise<{ endpoint: EndpointRow; secret: string }> {
    const url = await checkEndpointUrl(req.url, this.deps.policy);
    const events = checkEvents(req.events);
    const description = checkDescription(req.description);
    const secret = newSigningSecret();
    const now = new Date();
    const row: EndpointRow = {
      id: randomUUID(),
      org_id: ctx.orgId,
      url,
      events,
      description,
      enabled: true,
      secret_ciphertext: this.deps.secrets.seal(secret),
      created_at: now,
      updated_at: now,
    };
    await this.deps.repository.insertEndpoint(row, ctx);
    return { endpoint: row, secret };
  }

  /** @throws NOT_FOUND for an unknown endpoint or another org's. */
  async get(ctx: CallContext, id: string): Promise<EndpointRow> {
    const row = await this.deps.repository.findEndpoint(ctx.orgId, requireUuid(id, 'Webhook endpoint'));
    if (!row) throw AppError.notFound('Webhook endpoint not found.');
    return row;
  }

  /** The org's endpoints; `limit`/`offset` already checked (pageWindow). */
  async list(ctx: CallContext, page: { limit: number; offset: number }): Promise<{ rows: EndpointRow[]; total: number }> {
    return this.deps.repository.listEndpoints(ctx.orgId, page.limit, page.offset);
  }

  /**
   * Changes the given fields (`undefined` = keep; `description: null` clears it).
   * @throws NOT_FOUND; VALIDATION_ERROR as for create, or when no field is given.
   */
  async update(ctx: CallContext, id: string, req: { url?: string; events?: string[]; description?: string | null; enabled?: boolean }): Promise<EndpointRow> {
    requireUuid(id, 'Webhook endpoint');
    if (req.url === undefined && req.events === undefined && req.description === undefined && req.enabled === undefined) {
      throw AppError.validation('Give at least one of url, events, description, enabled.');
    }
    if (!(await this.deps.repository.findEndpoint(ctx.orgId, id))) throw AppError.notFound('Webhook endpoint not found.');
    const patch = {
      url: req.url === undefined ? undefined : await checkEndpointUrl(req.url, this.deps.policy),
      events: req.events === undefined ? undefined : checkEvents(req.events),
      description: req.description === undefined ? undefined : checkDescription(req.description),
      enabled: req.enabled,
    };
    const row = await this.deps.repository.updateEndpoint(ctx.orgId, id, patch, ctx);
    if (!row) throw AppError.notFound('Webhook endpoint not found.');
    // Re-enabling an endpoint makes its waiting deliveries due: wake the dispatcher.
    if (req.enabled) this.deps.onRetry?.();
    return row;
  }

  async delete(ctx: CallContext, id: string): Promise<void> {
    if (!(await this.deps.repository.deleteEndpoint(ctx.orgId, requireUuid(id, 'Webhook endpoint'), ctx)))
      throw AppError.notFound('Webhook endpoint not found.');
  }

  /** The delivery log of an endpoint; `limit`/`offset` already checked. @throws NOT_FOUND for an unknown endpoint. */
  async deliveries(ctx: CallContext, endpointId: string, page: { limit: number; offset: number }): Promise<{ rows: DeliveryRow[]; total: number }> {
    if (!(await this.deps.repository.findEndpoint(ctx.orgId, requireUuid(endpointId, 'Webhook endpoint'))))
      throw AppError.notFound('Webhook endpoint not found.');
    return this.deps.repository.listDeliveries(ctx.orgId, endpointId, page.limit, page.offset);
  }

  /**
   * Sends a delivery again (any status): it becomes `pending`, due now, with a fresh retry window;
   * per-resource order still holds (it waits for older pending deliveries of its resource).
   * @throws NOT_FOUND for an unknown endpoint or delivery, or another org's.
   */
  async retry(ctx: CallContext, endpointId: string, deliveryId: string): Promise<DeliveryRow> {
    requireUuid(endpointId, 'Webhook endpoint');
    requireUuid(deliveryId, 'Delivery');
    if (!(await this.deps.repository.findEndpoint(ctx.orgId, endpointId))) throw AppError.notFound('Webhook endpoint not found.');
    const row = await this.deps.repository.retryDelivery(ctx.orgId, endpointId, deliveryId, this.deps.retryWindowMs, ctx);
    if (!row) throw AppError.notFound('Delivery not found.');
    this.deps.onRetry?.();
    return row;
  }
}

import { AppError, CallContext, isUuid, DESCRIPTION_MAX_CHARS, pageWindow } from '@kb/common';
import { WEBHOOK_EVENT_TYPES } from '@kb/events';
import { webhooksV1 } from '@kb/proto';
import { randomUUID } from 'node:crypto';
import { newSigningSecret, SecretBox } from './secrets';
import { checkEndpointUrl, DestinationPolicy } from './url-policy';
import { DeliveryRow, EndpointRow, WebhooksRepository } from './webhooks.repository';

/** Longest endpoint description (characters), as for a project's description (service-api.md §8). */

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : undefined);

export function toProtoEndpoint(r: EndpointRow, secret?: string): webhooksV1.Endpoint {
  return {
    id: r.id,
    orgId: r.org_id,
    url: r.url,
    events: r.events,
    description: r.description ?? undefined,
    enabled: r.enabled,
    createdAt: iso(r.created_at)!,
    updatedAt: iso(r.updated_at)!,
    secret,
  };
}

export function toProtoDelivery(r: DeliveryRow): webhooksV1.Delivery {
  return {
    id: r.id,
    endpointId: r.endpoint_id,
    eventId: r.event_id,
    event: r.event_type,
    status: r.status,
    attempts: r.attempts,
    responseStatus: r.response_status ?? undefined,
    createdAt: iso(r.created_at)!,
    lastAttemptAt: iso(r.last_attempt_at),
    nextAttemptAt: r.status === 'pending' ? iso(r.next_attempt_at) : undefined,
    lastError: r.last_error ?? undefined,
  };
}

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
  if (unknown !== undefined) throw AppError.validation(`events: '${String(unknown).slice(0, 64)}' is not an event type; use ${WEBHOOK_EVENT_TYPES.join(', ')}, or "*".`);
  return [...new Set(events)];
}

function checkDescription(d: string | undefined | null): string | null {
  if (d === undefined || d === null) return null;
  if (d.length > DESCRIPTION_MAX_CHARS) throw AppError.validation(`description must be at most ${DESCRIPTION_MAX_CHARS} characters.`);
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

  /** @throws VALIDATION_ERROR for a bad url (scheme, private address), events or description. */
  async create(ctx: CallContext, req: webhooksV1.CreateEndpointRequest): Promise<webhooksV1.Endpoint> {
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
    await this.deps.repository.insertEndpoint(row);
    return toProtoEndpoint(row, secret);
  }

  async get(ctx: CallContext, id: string): Promise<webhooksV1.Endpoint> {
    const row = await this.deps.repository.findEndpoint(ctx.orgId, requireUuid(id, 'Webhook endpoint'));
    if (!row) throw AppError.notFound('Webhook endpoint not found.');
    return toProtoEndpoint(row);
  }

  async list(ctx: CallContext, req: webhooksV1.ListEndpointsRequest): Promise<webhooksV1.ListEndpointsResponse> {
    const { limit, offset } = pageWindow(req.page);
    const { rows, total } = await this.deps.repository.listEndpoints(ctx.orgId, limit, offset);
    return { endpoints: rows.map((r) => toProtoEndpoint(r)), total };
  }

  /** @throws NOT_FOUND; VALIDATION_ERROR as for create, or when no field is given. */
  async update(ctx: CallContext, req: webhooksV1.UpdateEndpointRequest): Promise<webhooksV1.Endpoint> {
    requireUuid(req.id, 'Webhook endpoint');
    if (req.url === undefined && !req.hasEvents && !req.hasDescription && req.enabled === undefined) {
      throw AppError.validation('Give at least one of url, events, description, enabled.');
    }
    if (!(await this.deps.repository.findEndpoint(ctx.orgId, req.id))) throw AppError.notFound('Webhook endpoint not found.');
    const patch = {
      url: req.url === undefined ? undefined : await checkEndpointUrl(req.url, this.deps.policy),
      events: req.hasEvents ? checkEvents(req.events) : undefined,
      description: req.hasDescription ? checkDescription(req.description) : undefined,
      enabled: req.enabled,
    };
    const row = await this.deps.repository.updateEndpoint(ctx.orgId, req.id, patch);
    if (!row) throw AppError.notFound('Webhook endpoint not found.');
    // Re-enabling an endpoint makes its waiting deliveries due: wake the dispatcher.
    if (req.enabled) this.deps.onRetry?.();
    return toProtoEndpoint(row);
  }

  async delete(ctx: CallContext, id: string): Promise<void> {
    if (!(await this.deps.repository.deleteEndpoint(ctx.orgId, requireUuid(id, 'Webhook endpoint')))) throw AppError.notFound('Webhook endpoint not found.');
  }

  async deliveries(ctx: CallContext, req: webhooksV1.ListDeliveriesRequest): Promise<webhooksV1.ListDeliveriesResponse> {
    const { limit, offset } = pageWindow(req.page);
    if (!(await this.deps.repository.findEndpoint(ctx.orgId, requireUuid(req.endpointId, 'Webhook endpoint')))) throw AppError.notFound('Webhook endpoint not found.');
    const { rows, total } = await this.deps.repository.listDeliveries(ctx.orgId, req.endpointId, limit, offset);
    return { deliveries: rows.map(toProtoDelivery), total };
  }

  /**
   * Sends a delivery again (any status): it becomes `pending`, due now, with a fresh retry window;
   * per-resource order still holds (it waits for older pending deliveries of its resource).
   * @throws NOT_FOUND for an unknown endpoint or delivery, or another org's.
   */
  async retry(ctx: CallContext, req: webhooksV1.RetryDeliveryRequest): Promise<webhooksV1.Delivery> {
    requireUuid(req.endpointId, 'Webhook endpoint');
    requireUuid(req.deliveryId, 'Delivery');
    if (!(await this.deps.repository.findEndpoint(ctx.orgId, req.endpointId))) throw AppError.notFound('Webhook endpoint not found.');
    const row = await this.deps.repository.retryDelivery(ctx.orgId, req.endpointId, req.deliveryId, this.deps.retryWindowMs);
    if (!row) throw AppError.notFound('Delivery not found.');
    this.deps.onRetry?.();
    return toProtoDelivery(row);
  }
}

import { pageWindow, pickCamelFields, UnaryHandlers } from '@kb/common';
import { deliveryStatus } from '@kb/events';
import { webhooksV1 } from '@kb/proto';
import { WebhooksService } from '../endpoints/webhooks.service';
import { DeliveryRow, EndpointRow } from '../endpoints/webhooks.repository';

const iso = (d: Date | null) => (d ? new Date(d).toISOString() : undefined);

/** An endpoint row as its gRPC message; `secret` only in the answer to its creation. */
export function toProtoEndpoint(r: EndpointRow, secret?: string): webhooksV1.Endpoint {
  return {
    ...pickCamelFields(r, ['id', 'org_id', 'url', 'events', 'description', 'enabled'], undefined),
    createdAt: iso(r.created_at)!,
    updatedAt: iso(r.updated_at)!,
    secret,
  };
}

/** A delivery row as its gRPC message; `next_attempt_at` only while the delivery is pending. */
export function toProtoDelivery(r: DeliveryRow): webhooksV1.Delivery {
  return {
    ...pickCamelFields(r, ['id', 'endpoint_id', 'event_id', 'attempts', 'response_status', 'last_error'], undefined),
    event: r.event_type,
    status: deliveryStatus.toProto(r.status),
    createdAt: iso(r.created_at)!,
    lastAttemptAt: iso(r.last_attempt_at),
    nextAttemptAt: r.status === 'pending' ? iso(r.next_attempt_at) : undefined,
  };
}

/**
 * gRPC controller of WebhooksService: decodes proto messages (page, the `has_*` presence flags of an
 * update) into use-case inputs, which validate, and maps the rows back to messages.
 */
export function webhooksGrpcHandlers(webhooks: WebhooksService): UnaryHandlers<typeof webhooksV1.WebhooksServiceService> {
  return {
    createEndpoint: async (req, ctx) => {
      const { endpoint, secret } = await webhooks.create(ctx, { url: req.url, events: req.events, description: req.description });
      return toProtoEndpoint(endpoint, secret);
    },
    getEndpoint: async (req, ctx) => toProtoEndpoint(await webhooks.get(ctx, req.id)),
    listEndpoints: async (req, ctx) => {
      const { rows, total } = await webhooks.list(ctx, pageWindow(req.page));
      return { endpoints: rows.map((r) => toProtoEndpoint(r)), total };
    },
    updateEndpoint: async (req, ctx) =>
      toProtoEndpoint(
        await webhooks.update(ctx, req.id, {
          url: req.url,
          events: req.hasEvents ? req.events : undefined,
          description: req.hasDescription ? (req.description ?? null) : undefined,
          enabled: req.enabled,
        }),
      ),
    deleteEndpoint: async (req, ctx) => {
      await webhooks.delete(ctx, req.id);
      return {};
    },
    listDeliveries: async (req, ctx) => {
      const { rows, total } = await webhooks.deliveries(ctx, req.endpointId, pageWindow(req.page));
      return { deliveries: rows.map(toProtoDelivery), total };
    },
    retryDelivery: async (req, ctx) => toProtoDelivery(await webhooks.retry(ctx, req.endpointId, req.deliveryId)),
  };
}

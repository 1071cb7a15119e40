import { UnaryHandlers } from '@kb/common';
import { webhooksV1 } from '@kb/proto';
import { WebhooksService } from '../endpoints/webhooks.service';

/** gRPC controller of WebhooksService: maps proto messages to the use cases (which validate). */
export function webhooksGrpcHandlers(webhooks: WebhooksService): UnaryHandlers<typeof webhooksV1.WebhooksServiceService> {
  return {
    createEndpoint: (req, ctx) => webhooks.create(ctx, req),
    getEndpoint: (req, ctx) => webhooks.get(ctx, req.id),
    listEndpoints: (req, ctx) => webhooks.list(ctx, req),
    updateEndpoint: (req, ctx) => webhooks.update(ctx, req),
    deleteEndpoint: async (req, ctx) => {
      await webhooks.delete(ctx, req.id);
      return {};
    },
    listDeliveries: (req, ctx) => webhooks.deliveries(ctx, req),
    retryDelivery: (req, ctx) => webhooks.retry(ctx, req),
  };
}

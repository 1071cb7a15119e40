import { type CallContext, ErrorCode, DESCRIPTION_MAX_CHARS, pickSnakeFields, WEBHOOK_URL_MAX_CHARS } from '@kb/common';
import { DELIVERY_STATUSES, deliveryStatus, WEBHOOK_EVENT_TYPES } from '@kb/events';
import { webhooksV1 } from '@kb/proto';
import { Body, Delete, HttpCode, Inject, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiOperation, ApiProperty, ApiPropertyOptional, ApiResponse } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsBoolean, IsOptional, IsString, ValidateIf } from 'class-validator';
import { type WebhooksClient } from '../common/clients';
import { Ctx } from '../common/http-context';
import { ApiController, ApiEnvelope, ApiErrors, ApiGet } from '../common/openapi';
import { pageOf, pageRequest, PaginationQuery } from '../common/pagination.dto';
import { WEBHOOKS_CLIENT } from '../common/tokens';
import { CharLength, UuidParamPipe } from '../common/validation';

const EVENTS = [...WEBHOOK_EVENT_TYPES, '*'];
const EVENTS_DESCRIPTION = `1 or more of ${WEBHOOK_EVENT_TYPES.join(', ')}; or ["*"] for every event`;

export class CreateWebhookDto {
  @ApiProperty({
    maxLength: WEBHOOK_URL_MAX_CHARS,
    example: 'https://example.com/hooks/kb',
    description: 'https (http only where the operator allows it); never a loopback, link-local or private address unless the operator allows them',
  })
  @IsString({ message: 'url must be a string' })
  @CharLength(1, WEBHOOK_URL_MAX_CHARS, { message: `url must be 1 to ${WEBHOOK_URL_MAX_CHARS} characters` })
  url: string;

  @ApiProperty({
    type: [String],
    enum: EVENTS,
    minItems: 1,
    maxItems: EVENTS.length,
    example: ['document.completed', 'document.failed'],
    description: EVENTS_DESCRIPTION,
  })
  @IsArray({ message: 'events must be an array of event types' })
  @ArrayMinSize(1, { message: 'events must have at least 1 item' })
  @ArrayMaxSize(EVENTS.length, { message: `events must have at most ${EVENTS.length} items` })
  @IsString({ each: true, message: 'events must contain only event type strings' })
  events: string[];

  @ApiPropertyOptional({ maxLength: DESCRIPTION_MAX_CHARS, nullable: true, example: 'ERP import' })
  @IsOptional()
  @IsString({ message: 'description must be a string' })
  @CharLength(0, DESCRIPTION_MAX_CHARS, { message: `description must be at most ${DESCRIPTION_MAX_CHARS} characters` })
  description?: string | null;
}

export class UpdateWebhookDto {
  @ApiPropertyOptional({ maxLength: WEBHOOK_URL_MAX_CHARS, example: 'https://hooks.example.org/kb-events', description: 'omit to keep the URL' })
  @ValidateIf((o: UpdateWebhookDto) => o.url !== undefined)
  @IsString({ message: 'url must be a string' })
  @CharLength(1, WEBHOOK_URL_MAX_CHARS, { message: `url must be 1 to ${WEBHOOK_URL_MAX_CHARS} characters` })
  url?: string;

  @ApiPropertyOptional({
    type: [String],
    enum: EVENTS,
    minItems: 1,
    maxItems: EVENTS.length,
    example: ['check_run.completed', 'batch.completed'],
    description: `omit to keep them; ${EVENTS_DESCRIPTION}`,
  })
  @ValidateIf((o: UpdateWebhookDto) => o.events !== undefined)
  @IsArray({ message: 'events must be an array of event types' })
  @ArrayMinSize(1, { message: 'events must have at least 1 item' })
  @ArrayMaxSize(EVENTS.length, { message: `events must have at most ${EVENTS.length} items` })
  @IsString({ each: true, message: 'events must contain only event type strings' })
  events?: string[];

  @ApiPropertyOptional({ maxLength: DESCRIPTION_MAX_CHARS, nullable: true, example: 'Nightly sync to the ERP', description: 'null clears the description' })
  @ValidateIf((o: UpdateWebhookDto) => o.description !== null && o.description !== undefined)
  @IsString({ message: 'description must be a string or null' })
  @CharLength(0, DESCRIPTION_MAX_CHARS, { message: `description must be at most ${DESCRIPTION_MAX_CHARS} characters` })
  description?: string | null;

  @ApiPropertyOptional({ example: false, description: 'false pauses deliveries (they wait, and are retried once re-enabled)' })
  @ValidateIf((o: UpdateWebhookDto) => o.enabled !== undefined)
  @IsBoolean({ message: 'enabled must be true or false' })
  enabled?: boolean;
}

class WebhookView {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty() org_id: string;
  @ApiProperty({ example: 'https://example.com/hooks/kb' }) url: string;
  @ApiProperty({ type: [String], enum: EVENTS, example: ['document.completed', 'document.failed'] }) events: string[];
  @ApiProperty({ type: String, nullable: true }) description: string | null;
  @ApiProperty() enabled: boolean;
  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({ format: 'date-time' }) updated_at: string;
}

class CreatedWebhookView extends WebhookView {
  @ApiProperty({ example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw3Tzs0DzNRHo=', description: 'Signing secret (Standard Webhooks format), shown this once.' })
  secret: string;
}

class DeliveryView {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ enum: WEBHOOK_EVENT_TYPES }) event: string;
  @ApiProperty({ format: 'uuid', description: 'The event id (webhook-id header; the same on every attempt).' }) event_id: string;
  @ApiProperty({ enum: [...DELIVERY_STATUSES] }) status: string;
  @ApiProperty({ type: 'integer', minimum: 0, example: 1 }) attempts: number;
  @ApiProperty({ type: 'integer', nullable: true, example: 200, description: 'HTTP status of the last answer; null when there was none' }) response_status:
    number | null;
  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) last_attempt_at: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'When a pending delivery is tried next' }) next_attempt_at: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'Why the last attempt failed' }) last_error: string | null;
}

/** Webhook endpoint as the API shows it (decisions.md "Webhooks"); `secret` only at creation. */
export function presentWebhook(e: webhooksV1.Endpoint) {
  return {
    ...pickSnakeFields(e, ['id', 'orgId', 'url', 'events', 'description', 'enabled', 'createdAt', 'updatedAt'], null),
    ...(e.secret !== undefined ? { secret: e.secret } : {}),
  };
}

/** One delivery of the log. */
export function presentDelivery(d: webhooksV1.Delivery) {
  return {
    ...pickSnakeFields(d, ['id', 'event', 'eventId'], null),
    status: deliveryStatus.fromProto(d.status),
    ...pickSnakeFields(d, ['attempts', 'responseStatus', 'createdAt', 'lastAttemptAt', 'nextAttemptAt', 'lastError'], null),
  };
}

/** /api/v2/webhooks: thin translation to WebhooksService over gRPC. */
@ApiController('Webhooks', 'api/v2/webhooks')
export class WebhooksController {
  constructor(@Inject(WEBHOOKS_CLIENT) private readonly webhooks: WebhooksClient) {}

  @Post()
  @ApiOperation({ summary: 'Create a webhook endpoint; the signing secret is in this answer only', operationId: 'createWebhook' })
  @ApiEnvelope(CreatedWebhookView, { status: 201 })
  async create(@Ctx() ctx: CallContext, @Body() body: CreateWebhookDto) {
    return presentWebhook(await this.webhooks.createEndpoint({ url: body.url, events: body.events, description: body.description ?? undefined }, ctx));
  }

  @ApiGet('', { summary: 'List webhook endpoints, newest first', operationId: 'listWebhooks' }, WebhookView, { paginated: true })
  async list(@Ctx() ctx: CallContext, @Query() q: PaginationQuery) {
    const res = await this.webhooks.listEndpoints({ page: pageRequest(q) }, ctx);
    return pageOf(q, res.endpoints.map(presentWebhook), res.total);
  }

  @ApiGet(':id', { summary: 'Get a webhook endpoint (without its secret)', operationId: 'getWebhook' }, WebhookView)
  async get(@Ctx() ctx: CallContext, @Param('id', UuidParamPipe) id: string) {
    return presentWebhook(await this.webhooks.getEndpoint({ id }, ctx));
  }

  @Patch(':id')
  @ApiOperation({ summary: 'Update url, events, description and/or enabled', operationId: 'updateWebhook' })
  @ApiEnvelope(WebhookView)
  async update(@Ctx() ctx: CallContext, @Param('id', UuidParamPipe) id: string, @Body() body: UpdateWebhookDto) {
    return presentWebhook(
      await this.webhooks.updateEndpoint(
        {
          id,
          url: body.url,
          hasEvents: body.events !== undefined,
          events: body.events ?? [],
          hasDescription: body.description !== undefined,
          description: body.description ?? undefined,
          enabled: body.enabled,
        },
        ctx,
      ),
    );
  }

  @Delete(':id')
  @HttpCode(204)
  @ApiOperation({ summary: 'Delete a webhook endpoint and its delivery log', operationId: 'deleteWebhook' })
  @ApiResponse({ status: 204, description: 'Deleted; empty body.' })
  async remove(@Ctx() ctx: CallContext, @Param('id', UuidParamPipe) id: string): Promise<void> {
    await this.webhooks.deleteEndpoint({ id }, ctx);
  }

  @ApiGet(':id/deliveries', { summary: "The endpoint's deliveries, newest first", operationId: 'listWebhookDeliveries' }, DeliveryView, { paginated: true })
  async deliveries(@Ctx() ctx: CallContext, @Param('id', UuidParamPipe) id: string, @Query() q: PaginationQuery) {
    const res = await this.webhooks.listDeliveries({ endpointId: id, page: pageRequest(q) }, ctx);
    return pageOf(q, res.deliveries.map(presentDelivery), res.total);
  }

  @Post(':id/deliveries/:delivery_id/retry')
  @HttpCode(200)
  @ApiOperation({ summary: 'Send a delivery again (any status): it becomes pending and is attempted at once', operationId: 'retryWebhookDelivery' })
  @ApiEnvelope(DeliveryView)
  @ApiErrors(ErrorCode.NOT_FOUND)
  async retry(@Ctx() ctx: CallContext, @Param('id', UuidParamPipe) id: string, @Param('delivery_id', UuidParamPipe) deliveryId: string) {
    return presentDelivery(await this.webhooks.retryDelivery({ endpointId: id, deliveryId }, ctx));
  }
}

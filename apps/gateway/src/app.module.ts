import { createAsyncClient, Logger } from '@kb/common';
import { agentV1, checkV1, documentsV1, webhooksV1 } from '@kb/proto';
import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD } from '@nestjs/core';
import { DataSource } from 'typeorm';
import { AccountsService } from './accounts/accounts.service';
import { AgentController } from './agent/agent.controller';
import { AuditController } from './audit/audit.controller';
import { CheckRunsController, CHECK_RUNS_CLIENT } from './check/check-runs.controller';
import { BatchesController } from './agent/batches.controller';
import { ChatController } from './agent/chat.controller';
import { AGENT_STREAM_CLIENT, AgentStreamClient } from './agent/chat-stream.client';
import { CheckController } from './check/check.controller';
import { ApiKeyGuard } from './common/api-key.guard';
import { ErrorEnvelopeFilter } from './common/error.filter';
import {
  ACCOUNTS,
  AGENT_CLIENT,
  CHECK_CLIENT,
  DOCUMENTS_CLIENT,
  GATEWAY_DATABASE,
  HEALTH_TARGETS,
  CHAT_SSE_HEARTBEAT_MS,
  LOGGER,
  WEBHOOKS_CLIENT,
} from './common/tokens';
import { WebhooksController } from './webhooks/webhooks.controller';
import { DocumentsController } from './documents/documents.controller';
import { HealthController, HealthTargets } from './health/health.controller';
import { OrganizationController } from './organization/organization.controller';
import { ProjectsController } from './projects/projects.controller';

/**
 * Every controller of the gateway, in the order of the reference. A new controller is added here
 * only: the app (AppModule) and the exported OpenAPI document (reference.ts) both read this list.
 */
export const GATEWAY_CONTROLLERS = [
  HealthController,
  OrganizationController,
  ProjectsController,
  DocumentsController,
  CheckController,
  CheckRunsController,
  AgentController,
  ChatController,
  BatchesController,
  WebhooksController,
  AuditController,
];

export interface GatewayModuleOptions {
  database: DataSource;
  logger: Logger;
  /** The gateway's key lookup (shared with the admission hook and the cache invalidation). */
  accounts: AccountsService;
  addresses: { documents: string; check: string; agent: string; retrieval: string; ingestion: string; webhooks: string };
  /** Streamed chat: an SSE comment after this much silence (ms; CHAT_SSE_HEARTBEAT_MS). */
  chatHeartbeatMs: number;
  /** The gateway's NATS connection: `/readyz` checks it (HealthTargets.nats). */
  nats?: HealthTargets['nats'];
}

/**
 * The gateway's root module: controllers, the API-key guard and error mapping. Authentication,
 * rate limits and quotas run earlier, in the Fastify admission hook; the envelope, idempotency
 * keys and the request timeout are Fastify hooks and options too (createGateway in gateway.ts):
 * Nest interceptors would cost an async-context binding and an RxJS pipeline per request.
 */
@Module({})
export class AppModule {
  static create(options: GatewayModuleOptions): DynamicModule {
    const health: HealthTargets = { database: options.database, services: { ...options.addresses }, nats: options.nats };
    return {
      module: AppModule,
      controllers: GATEWAY_CONTROLLERS,
      providers: [
        { provide: ACCOUNTS, useValue: options.accounts },
        { provide: GATEWAY_DATABASE, useValue: options.database },
        { provide: LOGGER, useValue: options.logger },
        { provide: DOCUMENTS_CLIENT, useValue: createAsyncClient(documentsV1.DocumentsServiceService, options.addresses.documents) },
        { provide: CHECK_CLIENT, useValue: createAsyncClient(checkV1.CheckServiceService, options.addresses.check) },
        { provide: CHECK_RUNS_CLIENT, useValue: createAsyncClient(checkV1.CheckRunsServiceService, options.addresses.check) },
        { provide: AGENT_CLIENT, useValue: createAsyncClient(agentV1.AgentServiceService, options.addresses.agent) },
        { provide: WEBHOOKS_CLIENT, useValue: createAsyncClient(webhooksV1.WebhooksServiceService, options.addresses.webhooks) },
        { provide: AGENT_STREAM_CLIENT, useValue: new AgentStreamClient(options.addresses.agent) },
        { provide: HEALTH_TARGETS, useValue: health },
        { provide: CHAT_SSE_HEARTBEAT_MS, useValue: options.chatHeartbeatMs },
        { provide: APP_GUARD, useClass: ApiKeyGuard },
        { provide: APP_FILTER, useValue: new ErrorEnvelopeFilter(options.logger) },
      ],
    };
  }
}

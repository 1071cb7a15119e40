import { AsyncClient } from '@kb/common';
import { agentV1, checkV1, documentsV1, webhooksV1 } from '@kb/proto';

export type DocumentsClient = AsyncClient<typeof documentsV1.DocumentsServiceService>;
export type CheckClient = AsyncClient<typeof checkV1.CheckServiceService>;
export type AgentClient = AsyncClient<typeof agentV1.AgentServiceService>;
export type WebhooksClient = AsyncClient<typeof webhooksV1.WebhooksServiceService>;

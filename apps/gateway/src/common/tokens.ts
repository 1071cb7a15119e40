/** Nest injection tokens of the gateway's providers. */
export const ACCOUNTS = Symbol('AccountsService');
export const DOCUMENTS_CLIENT = Symbol('DocumentsClient');
export const CHECK_CLIENT = Symbol('CheckClient');
export const AGENT_CLIENT = Symbol('AgentClient');
export const WEBHOOKS_CLIENT = Symbol('WebhooksClient');
export const HEALTH_TARGETS = Symbol('HealthTargets');
export const LOGGER = Symbol('Logger');
export const GATEWAY_DATABASE = Symbol('GatewayDatabase');
/** CHAT_SSE_HEARTBEAT_MS of the gateway's config (ms): the chat stream's heartbeat interval. */
export const CHAT_SSE_HEARTBEAT_MS = Symbol('ChatSseHeartbeatMs');

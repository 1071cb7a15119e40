import '@kb/telemetry/register'; // [telemetry] must stay the first import (instruments grpc/http)
import { createAsyncClient, createLogger, env, loadConfig, runService, sharedEnv, startGrpcServer, UnaryHandlers } from '@kb/common';
import { agentV1, documentsV1, retrievalV1 } from '@kb/proto';
import { QueryService } from './answering/query.service';
import { recordModelTokens, startMetricsServer } from '@kb/telemetry'; // [telemetry]

const logger = createLogger('agent');

runService(logger, async () => {
  const config = loadConfig({
    ...sharedEnv.telemetry, // [telemetry]
    /** Port of the Prometheus /metrics listener (never the public port). */
    AGENT_METRICS_PORT: env.port(9465), // [telemetry]
    ...sharedEnv.grpcHost,
    DOCUMENTS_GRPC_URL: sharedEnv.clients.DOCUMENTS_GRPC_URL,
    RETRIEVAL_GRPC_URL: sharedEnv.clients.RETRIEVAL_GRPC_URL,
    AGENT_GRPC_PORT: env.port(50055),
  });
  const documents = createAsyncClient(documentsV1.DocumentsServiceService, config.DOCUMENTS_GRPC_URL);
  const retrieval = createAsyncClient(retrievalV1.RetrievalServiceService, config.RETRIEVAL_GRPC_URL);
  const queries = new QueryService({ documents, retrieval });
  const handlers: UnaryHandlers<typeof agentV1.AgentServiceService> = {
    query: async (req, ctx) => {
      const answer = await queries.query(ctx, req);
      recordModelTokens(answer.model || 'embedded', answer.usage); // [telemetry]
      return answer;
    },
  };
  const grpc = await startGrpcServer({
    host: config.GRPC_HOST,
    port: config.AGENT_GRPC_PORT,
    logger,
    services: [{ name: 'kb.agent.v1.AgentService', definition: agentV1.AgentServiceService, handlers }],
  });
  // [telemetry] Prometheus /metrics on its own port
  const metricsServer = await startMetricsServer({ service: 'agent', enabled: config.METRICS_ENABLED, host: config.METRICS_HOST, port: config.AGENT_METRICS_PORT });
  return async () => {
    await metricsServer.close(); // [telemetry]
    await grpc.shutdown();
    documents.close();
    retrieval.close();
  };
});

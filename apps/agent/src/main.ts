import { createAsyncClient, createLogger, env, loadConfig, runService, sharedEnv, startGrpcServer, UnaryHandlers } from '@kb/common';
import { agentV1, documentsV1, retrievalV1 } from '@kb/proto';
import { QueryService } from './answering/query.service';

const logger = createLogger('agent');

runService(logger, async () => {
  const config = loadConfig({
    ...sharedEnv.grpcHost,
    DOCUMENTS_GRPC_URL: sharedEnv.clients.DOCUMENTS_GRPC_URL,
    RETRIEVAL_GRPC_URL: sharedEnv.clients.RETRIEVAL_GRPC_URL,
    AGENT_GRPC_PORT: env.port(50055),
  });
  const documents = createAsyncClient(documentsV1.DocumentsServiceService, config.DOCUMENTS_GRPC_URL);
  const retrieval = createAsyncClient(retrievalV1.RetrievalServiceService, config.RETRIEVAL_GRPC_URL);
  const queries = new QueryService({ documents, retrieval });
  const handlers: UnaryHandlers<typeof agentV1.AgentServiceService> = {
    query: (req, ctx) => queries.query(ctx, req),
  };
  const grpc = await startGrpcServer({
    host: config.GRPC_HOST,
    port: config.AGENT_GRPC_PORT,
    logger,
    services: [{ name: 'kb.agent.v1.AgentService', definition: agentV1.AgentServiceService, handlers }],
  });
  return async () => {
    await grpc.shutdown();
    documents.close();
    retrieval.close();
  };
});

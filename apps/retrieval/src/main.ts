import '@kb/telemetry/register'; // [telemetry] must stay the first import (instruments grpc/http)
import { bootService, env, loadConfig, sharedEnv } from '@kb/common';
import { retrievalV1 } from '@kb/proto';
import { retrievalGrpcHandlers } from './grpc/retrieval.grpc-controller';
import { openRetrieval, retrievalEnv } from './retrieval-factory';

bootService({ name: 'retrieval', metricsPort: 9463 }, async (runtime) => {
  const { logger } = runtime;
  const config = loadConfig({
    ...sharedEnv.grpcHost,
    RETRIEVAL_GRPC_PORT: env.port(50053),
    // Store, embedding model, reranker and fusion (retrieval-factory.ts).
    ...retrievalEnv,
  });
  const retrieval = await openRetrieval(config, { logger });
  logger.info(retrieval.describe(), 'retrieval configured');
  const grpc = await runtime.serveGrpc({
    host: config.GRPC_HOST,
    port: config.RETRIEVAL_GRPC_PORT,
    services: [
      { name: 'kb.retrieval.v1.RetrievalService', definition: retrievalV1.RetrievalServiceService, handlers: retrievalGrpcHandlers(retrieval.service) },
    ],
  });
  logger.info({ port: grpc.port }, 'retrieval gRPC listening');
  return () => retrieval.close();
});

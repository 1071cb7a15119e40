import '@kb/telemetry/register'; // [telemetry] must stay the first import (instruments grpc/http)
import { bootService } from '@kb/common';
import { retrievalV1 } from '@kb/proto';
import { retrievalGrpcHandlers } from './grpc/retrieval.grpc-controller';
import { openRetrieval, retrievalEnv } from './retrieval-factory';

// The settings: store, embedding model, reranker and fusion (retrieval-factory.ts).
bootService({ name: 'retrieval', metricsPort: 9463, grpcPort: 50053, env: retrievalEnv }, async ({ runtime, logger, config }) => {
  const retrieval = await openRetrieval(config, { logger });
  logger.info(retrieval.describe(), 'retrieval configured');
  const grpc = await runtime.serveGrpc({
    services: [
      { name: 'kb.retrieval.v1.RetrievalService', definition: retrievalV1.RetrievalServiceService, handlers: retrievalGrpcHandlers(retrieval.service) },
    ],
  });
  logger.info({ port: grpc.port }, 'retrieval gRPC listening');
  return () => retrieval.close();
});

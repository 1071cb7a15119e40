import '@kb/telemetry/register'; // [telemetry] must stay the first import (instruments grpc/http)
import { createLogger, env, loadConfig, runService, sharedEnv, startGrpcServer } from '@kb/common';
import { retrievalV1 } from '@kb/proto';
import { retrievalGrpcHandlers } from './grpc/retrieval.grpc-controller';
import { openRetrieval, retrievalEnv } from './retrieval-factory';
import { startMetricsServer } from '@kb/telemetry'; // [telemetry]

const logger = createLogger('retrieval');

runService(logger, async () => {
  const config = loadConfig({
    ...sharedEnv.telemetry, // [telemetry]
    /** Port of the Prometheus /metrics listener (never the public port). */
    RETRIEVAL_METRICS_PORT: env.port(9463), // [telemetry]
    ...sharedEnv.grpcHost,
    RETRIEVAL_GRPC_PORT: env.port(50053),
    // Store, embedding model, reranker and fusion (retrieval-factory.ts).
    ...retrievalEnv,
  });
  const retrieval = await openRetrieval(config, { logger });
  logger.info(retrieval.describe(), 'retrieval configured');
  const grpc = await startGrpcServer({
    host: config.GRPC_HOST,
    port: config.RETRIEVAL_GRPC_PORT,
    logger,
    services: [
      { name: 'kb.retrieval.v1.RetrievalService', definition: retrievalV1.RetrievalServiceService, handlers: retrievalGrpcHandlers(retrieval.service) },
    ],
  });
  logger.info({ port: grpc.port }, 'retrieval gRPC listening');
  // [telemetry] Prometheus /metrics on its own port
  const metricsServer = await startMetricsServer({
    service: 'retrieval',
    enabled: config.METRICS_ENABLED,
    host: config.METRICS_HOST,
    port: config.RETRIEVAL_METRICS_PORT,
  });
  return async () => {
    await metricsServer.close(); // [telemetry]
    await grpc.shutdown();
    await retrieval.close();
  };
});

import '@kb/telemetry/register'; // [telemetry] must stay the first import (instruments grpc/http)
import { createAsyncClient, createLogger, env, loadConfig, runService, sharedEnv, startGrpcServer, UnaryHandlers } from '@kb/common';
import { checkV1, documentsV1, retrievalV1 } from '@kb/proto';
import { VerifyService } from './verification/verify.service';
import { metrics, recordModelTokens, startMetricsServer } from '@kb/telemetry'; // [telemetry]

const logger = createLogger('check');

runService(logger, async () => {
  const config = loadConfig({
    ...sharedEnv.telemetry, // [telemetry]
    /** Port of the Prometheus /metrics listener (never the public port). */
    CHECK_METRICS_PORT: env.port(9464), // [telemetry]
    ...sharedEnv.grpcHost,
    DOCUMENTS_GRPC_URL: sharedEnv.clients.DOCUMENTS_GRPC_URL,
    RETRIEVAL_GRPC_URL: sharedEnv.clients.RETRIEVAL_GRPC_URL,
    CHECK_GRPC_PORT: env.port(50054),
  });
  const documents = createAsyncClient(documentsV1.DocumentsServiceService, config.DOCUMENTS_GRPC_URL);
  const retrieval = createAsyncClient(retrievalV1.RetrievalServiceService, config.RETRIEVAL_GRPC_URL);
  const verifier = new VerifyService({ documents, retrieval });
  const handlers: UnaryHandlers<typeof checkV1.CheckServiceService> = {
    verify: async (req, ctx) => {
      const verdict = await verifier.verify(ctx, req);
      metrics.checkVerifications.inc({ verdict: verdict.verdict }); // [telemetry]
      recordModelTokens('embedded', verdict.usage); // [telemetry] the built-in judge (no model configured)
      return verdict;
    },
  };
  const grpc = await startGrpcServer({
    host: config.GRPC_HOST,
    port: config.CHECK_GRPC_PORT,
    logger,
    services: [{ name: 'kb.check.v1.CheckService', definition: checkV1.CheckServiceService, handlers }],
  });
  // [telemetry] Prometheus /metrics on its own port
  const metricsServer = await startMetricsServer({ service: 'check', enabled: config.METRICS_ENABLED, host: config.METRICS_HOST, port: config.CHECK_METRICS_PORT });
  return async () => {
    await metricsServer.close(); // [telemetry]
    await grpc.shutdown();
    documents.close();
    retrieval.close();
  };
});

import { createAsyncClient, createLogger, env, loadConfig, runService, sharedEnv, startGrpcServer, UnaryHandlers } from '@kb/common';
import { checkV1, documentsV1, retrievalV1 } from '@kb/proto';
import { VerifyService } from './verification/verify.service';

const logger = createLogger('check');

runService(logger, async () => {
  const config = loadConfig({
    ...sharedEnv.grpcHost,
    DOCUMENTS_GRPC_URL: sharedEnv.clients.DOCUMENTS_GRPC_URL,
    RETRIEVAL_GRPC_URL: sharedEnv.clients.RETRIEVAL_GRPC_URL,
    CHECK_GRPC_PORT: env.port(50054),
  });
  const documents = createAsyncClient(documentsV1.DocumentsServiceService, config.DOCUMENTS_GRPC_URL);
  const retrieval = createAsyncClient(retrievalV1.RetrievalServiceService, config.RETRIEVAL_GRPC_URL);
  const verifier = new VerifyService({ documents, retrieval });
  const handlers: UnaryHandlers<typeof checkV1.CheckServiceService> = {
    verify: (req, ctx) => verifier.verify(ctx, req),
  };
  const grpc = await startGrpcServer({
    host: config.GRPC_HOST,
    port: config.CHECK_GRPC_PORT,
    logger,
    services: [{ name: 'kb.check.v1.CheckService', definition: checkV1.CheckServiceService, handlers }],
  });
  return async () => {
    await grpc.shutdown();
    documents.close();
    retrieval.close();
  };
});

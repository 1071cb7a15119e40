import '@kb/telemetry/register'; // [telemetry] must stay the first import (instruments grpc/http)
import { createLogger, env, loadConfig, runService, sharedEnv, startGrpcServer } from '@kb/common';
import { embeddingsEnv } from '@kb/models';
import { retrievalV1 } from '@kb/proto';
import { z } from 'zod';
import { retrievalGrpcHandlers } from './grpc/retrieval.grpc-controller';
import { openRetrieval } from './retrieval-factory';
import { FUSION_METHODS, SCORE_NORMALIZATIONS } from './search/fusion';
import { startMetricsServer } from '@kb/telemetry'; // [telemetry]

const logger = createLogger('retrieval');

/** Treats an empty variable as unset (compose and Helm pass `""` for unset optional values). */
const unsetIfEmpty = <T extends z.ZodTypeAny>(schema: T) => z.preprocess((v) => (v === '' ? undefined : v), schema);

runService(logger, async () => {
  const config = loadConfig({
    ...sharedEnv.telemetry, // [telemetry]
    /** Port of the Prometheus /metrics listener (never the public port). */
    RETRIEVAL_METRICS_PORT: env.port(9463), // [telemetry]
    ...sharedEnv.grpcHost,
    RETRIEVAL_GRPC_PORT: env.port(50053),
    /** Folder of the embedded vector store (LanceDB). */
    RETRIEVAL_DATA_DIR: env.string('.data/lancedb'),
    /** Vector store adapter: the embedded LanceDB (default) or Qdrant. */
    VECTOR_STORE: z.enum(['lancedb', 'qdrant']).default('lancedb'),
    QDRANT_URL: unsetIfEmpty(z.string().url('QDRANT_URL must be a URL such as http://qdrant:6333').optional()),
    QDRANT_API_KEY: unsetIfEmpty(z.string().optional()),
    QDRANT_COLLECTION: z.string().regex(/^[A-Za-z0-9_-]{1,200}$/).default('kb_chunks'),
    ...embeddingsEnv,
    /** Optional cross-encoder rerank endpoint (`…/rerank`), Cohere/Jina-style or TEI. */
    RERANK_BASE_URL: unsetIfEmpty(z.string().url('RERANK_BASE_URL must be a URL such as http://localhost:8082/v1').optional()),
    RERANK_API_KEY: unsetIfEmpty(z.string().optional()),
    RERANK_MODEL: unsetIfEmpty(z.string().optional()),
    RERANK_PROTOCOL: z.enum(['cohere', 'tei']).default('cohere'),
    /** Candidates per list fed to fusion and reranking. */
    RERANK_CANDIDATES: z.coerce.number().int().min(1).max(1000).default(50),
    /** Fusion of lexical and dense lists: `convex` (normalised convex combination) or `rrf`; unset = the measured default (fusion.ts). */
    RETRIEVAL_FUSION: unsetIfEmpty(z.enum(FUSION_METHODS).optional()),
    /** `convex`: weight of the dense list in [0, 1]. */
    RETRIEVAL_FUSION_ALPHA: unsetIfEmpty(z.coerce.number().min(0).max(1).optional()),
    /** `convex`: score normalisation, `tmm` (theoretical min-max) or `minmax`. */
    RETRIEVAL_FUSION_NORMALIZATION: unsetIfEmpty(z.enum(SCORE_NORMALIZATIONS).optional()),
    /** `rrf`: the constant k of 1/(k + rank). */
    RETRIEVAL_RRF_K: unsetIfEmpty(z.coerce.number().min(0).max(10_000).optional()),
  });
  const retrieval = await openRetrieval(config, { logger });
  logger.info(retrieval.describe(), 'retrieval configured');
  const grpc = await startGrpcServer({
    host: config.GRPC_HOST,
    port: config.RETRIEVAL_GRPC_PORT,
    logger,
    services: [{ name: 'kb.retrieval.v1.RetrievalService', definition: retrievalV1.RetrievalServiceService, handlers: retrievalGrpcHandlers(retrieval.service) }],
  });
  logger.info({ port: grpc.port }, 'retrieval gRPC listening');
  // [telemetry] Prometheus /metrics on its own port
  const metricsServer = await startMetricsServer({ service: 'retrieval', enabled: config.METRICS_ENABLED, host: config.METRICS_HOST, port: config.RETRIEVAL_METRICS_PORT });
  return async () => {
    await metricsServer.close(); // [telemetry]
    await grpc.shutdown();
    await retrieval.close();
  };
});

import '@kb/telemetry/register'; // [telemetry] must stay the first import (instruments grpc/http)
import { bootService, env, JETSTREAM_ACK_WAIT_MS, publishEvent, runConsumer, sharedEnv } from '@kb/common';
import {
  CHECK_STREAM,
  CHECK_STREAM_SUBJECTS,
  CheckRequirementsRequestedEvent,
  CheckSubjects,
  USAGE_STREAM,
  USAGE_STREAM_SUBJECTS,
  UsageSubjects,
  natsWithWebhookOutbox,
} from '@kb/events';
import { embeddingsEnv, openEmbeddingModel } from '@kb/models';
import { z } from 'zod';
import { checkV1, documentsV1, retrievalV1 } from '@kb/proto';
import { openCheckDatabase } from './database/database';
import { runsGrpcHandlers, verifyGrpcHandlers } from './grpc/check.grpc-controller';
import { RunWorker } from './runs/run-worker';
import { runEvents } from './runs/run-events';
import { RunsRepository } from './runs/runs.repository';
import { RunsService } from './runs/runs.service';
import { Assessor, knowledgeSearch } from './verification/assessor';
import { createJudge, openNliModel, openRsmModel } from './verification/create-judge';
import { UsageRecorder } from './verification/usage';
import { VerifyService } from './verification/verify.service';
import { metrics, recordModelTokens } from '@kb/telemetry'; // [telemetry]

/** The check service's settings (README "Configuration"); bootService validates them with its own at start. */
const checkEnv = {
  ...sharedEnv.database,
  ...sharedEnv.nats,
  // The judge's chat model (createJudge; unset LLM_BASE_URL = embedded judge).
  ...sharedEnv.chatModel,
  // The embedded judge chooses evidence sentences by meaning with the same embedding model as retrieval.
  ...embeddingsEnv,
  DOCUMENTS_GRPC_URL: sharedEnv.clients.DOCUMENTS_GRPC_URL,
  RETRIEVAL_GRPC_URL: sharedEnv.clients.RETRIEVAL_GRPC_URL,
  /** Check-run work items (groups of requirements) processed at once by this replica. */
  CHECK_RUN_CONCURRENCY: env.int(4),
  /** Requirements per JetStream work item. */
  CHECK_RUN_GROUP_SIZE: env.int(5),
  /** Redelivery delay of a work item whose worker stopped sending progress (crashed); the platform's JetStream ack wait by default. */
  CHECK_RUN_ACK_WAIT_MS: env.int(JETSTREAM_ACK_WAIT_MS),
  /** Deliveries of one work item before its run is failed. */
  CHECK_RUN_MAX_ATTEMPTS: env.int(5),
  /** The embedded judge's entailment cross-encoder: a model folder; empty = the committed libs/text/models/judge-nli-minilm; `none` = off. */
  JUDGE_NLI_MODEL_DIR: z.string().default(''),
  /** The embedded judge's requirement-satisfaction model: a model folder; empty = the committed libs/text/models/judge-rsm-minilm; `none` = off. */
  JUDGE_RSM_MODEL_DIR: z.string().default(''),
  /** onnxruntime intra-op threads per forward pass of the judge's cross-encoders (docs/check.md "Performance"). */
  JUDGE_MODEL_THREADS: env.int(2),
  /** Worker threads per cross-encoder, each running the passes of other requirements side by side (docs/check.md "Performance"). */
  JUDGE_MODEL_WORKERS: env.int(2),
  ...sharedEnv.webhookOutbox,
};

bootService({ name: 'check', metricsPort: 9464, grpcPort: 50054, env: checkEnv }, async ({ runtime, logger, config }) => {
  const db = await runtime.database(openCheckDatabase(config.DATABASE_URL));
  // Webhook events written with check-run state changes (docs/webhooks.md) go out from here.
  const nc = await natsWithWebhookOutbox(runtime, db, config, [
    [CHECK_STREAM, CHECK_STREAM_SUBJECTS],
    [USAGE_STREAM, USAGE_STREAM_SUBJECTS],
  ]);
  const documents = runtime.client(documentsV1.DocumentsServiceService, config.DOCUMENTS_GRPC_URL);
  const retrieval = runtime.client(retrievalV1.RetrievalServiceService, config.RETRIEVAL_GRPC_URL);
  const embeddings = await openEmbeddingModel(config);
  if (!embeddings.model) logger.warn({ reason: embeddings.reason }, 'no embedding model: the embedded judge aligns evidence by words only');
  const passes = { threads: config.JUDGE_MODEL_THREADS, workers: config.JUDGE_MODEL_WORKERS };
  const nli = await openNliModel(config.JUDGE_NLI_MODEL_DIR, embeddings.model, false, passes);
  // A warning only when the judge would use the model; off by design (the default judge has no nli variant) is info.
  if (!nli.model) logger[nli.degraded ? 'warn' : 'info']({ reason: nli.reason }, 'no entailment model: the embedded judge runs without it');
  const rsm = await openRsmModel(config.JUDGE_RSM_MODEL_DIR, embeddings.model, false, passes);
  if (!rsm.model) logger[rsm.degraded ? 'warn' : 'info']({ reason: rsm.reason }, 'no requirement-satisfaction model: the embedded judge runs without it');
  const judge = createJudge(config, logger, embeddings.model, nli.model, rsm.model);
  const assessor = new Assessor(knowledgeSearch({ documents, retrieval }), judge);
  const usage = new UsageRecorder(async (event) => {
    recordModelTokens(event.model, event); // [telemetry]
    await publishEvent(nc, UsageSubjects.tokensRecorded, event, event.id);
  }, logger);
  const repository = new RunsRepository(db, runEvents);
  const verifier = new VerifyService({ documents, assessor, usage });
  const runs = new RunsService({
    repository,
    documents,
    publishWork: (item, msgId) => publishEvent(nc, CheckSubjects.requirementsRequested, item, msgId),
    groupSize: config.CHECK_RUN_GROUP_SIZE,
    logger,
  });
  const worker = new RunWorker({
    repository,
    assessor,
    judge,
    usage,
    logger,
    // [telemetry] check-run throughput
    observe: {
      requirementChecked: (outcome) => metrics.checkRequirementsEvaluated.inc({ verdict: outcome }),
      runEnded: (status) => metrics.checkRuns.inc({ status }),
    },
  });
  const consumer = await runConsumer<CheckRequirementsRequestedEvent>(nc, {
    stream: CHECK_STREAM,
    durable: 'check-runs',
    filterSubject: CheckSubjects.requirementsRequested,
    ackWaitMs: config.CHECK_RUN_ACK_WAIT_MS,
    maxDeliver: config.CHECK_RUN_MAX_ATTEMPTS,
    concurrency: Math.max(1, config.CHECK_RUN_CONCURRENCY),
    retryDelayMs: 2_000,
    logger,
    // One run per work item at a time in this process: a redelivery racing the first delivery
    // (nats-server 2.9, see runConsumer's singleFlightKey) waits for it instead of judging twice.
    singleFlightKey: (item) => (Array.isArray(item?.requirementIds) ? `${item.runId}:${item.generation}:${item.requirementIds.join(',')}` : null),
    handler: (item, delivery) => worker.process(item, delivery),
  });

  const grpc = await runtime.serveGrpc({
    services: [
      // [telemetry] verdict counts
      {
        name: 'kb.check.v1.CheckService',
        definition: checkV1.CheckServiceService,
        handlers: verifyGrpcHandlers(verifier, (verdict) => metrics.checkVerifications.inc({ verdict })),
      },
      { name: 'kb.check.v1.CheckRunsService', definition: checkV1.CheckRunsServiceService, handlers: runsGrpcHandlers(runs) },
    ],
  });
  logger.info({ port: grpc.port, judge: judge.model }, 'check gRPC listening');
  return () => consumer.stop();
});

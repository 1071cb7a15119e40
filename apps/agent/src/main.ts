import '@kb/telemetry/register'; // [telemetry] must stay the first import (instruments grpc/http)
import { bootService, env, JETSTREAM_ACK_WAIT_MS, publishEvent, runConsumer, sharedEnv } from '@kb/common';
import {
  AGENT_STREAM,
  AGENT_STREAM_SUBJECTS,
  AgentSubjects,
  BatchQuestionEvent,
  TokensRecordedEvent,
  USAGE_STREAM,
  USAGE_STREAM_SUBJECTS,
  UsageSubjects,
  natsWithWebhookOutbox,
} from '@kb/events';
import { chatModelFromConfig, embeddingsEnv, openEmbeddingModel } from '@kb/models';
import { agentV1, documentsV1, retrievalV1 } from '@kb/proto';
import { randomUUID } from 'node:crypto';
import { AnswerService } from './answering/answer.service';
import { batchEvents } from './batches/batch-events';
import { BatchesRepository } from './batches/batches.repository';
import { BatchesService } from './batches/batches.service';
import { openAgentDatabase } from './database/database';
import { AgentUnaryDefinition, agentUnaryHandlers, chatStreamHandler } from './grpc/agent.grpc-controller';
import { recordModelTokens } from '@kb/telemetry'; // [telemetry]

/** The agent service's settings (README "Configuration"); bootService validates them with its own at start. */
const agentEnv = {
  ...sharedEnv.database,
  ...sharedEnv.nats,
  ...sharedEnv.chatModel,
  /** The embedding model that chooses answer sentences by meaning (the same settings as retrieval's). */
  ...embeddingsEnv,
  DOCUMENTS_GRPC_URL: sharedEnv.clients.DOCUMENTS_GRPC_URL,
  RETRIEVAL_GRPC_URL: sharedEnv.clients.RETRIEVAL_GRPC_URL,
  /** Batch questions answered at once by one agent process. */
  AGENT_BATCH_CONCURRENCY: env.int(4),
  /** How long a batch question may go without a worker heartbeat before JetStream hands it to another worker (ms); the platform's JetStream ack wait by default. */
  AGENT_BATCH_ACK_WAIT_MS: env.int(JETSTREAM_ACK_WAIT_MS),
  ...sharedEnv.webhookOutbox,
};

bootService({ name: 'agent', metricsPort: 9465, grpcPort: 50055, env: agentEnv }, async ({ runtime, logger, config }) => {
  const model = chatModelFromConfig(config);
  // Answer sentences are chosen by meaning with the embedding model; without one the answerer's
  // lexical variant is used (said once here).
  const embeddings = await openEmbeddingModel(config);
  if (!embeddings.model) logger.warn({ reason: embeddings.reason }, 'answer sentences are chosen lexically');
  const db = await runtime.database(openAgentDatabase(config.DATABASE_URL));
  // Webhook events written with batch state changes (docs/webhooks.md) go out from here.
  const nc = await natsWithWebhookOutbox(runtime, db, config, [
    [USAGE_STREAM, USAGE_STREAM_SUBJECTS],
    [AGENT_STREAM, AGENT_STREAM_SUBJECTS],
  ]);
  const documents = runtime.client(documentsV1.DocumentsServiceService, config.DOCUMENTS_GRPC_URL);
  const retrieval = runtime.client(retrievalV1.RetrievalServiceService, config.RETRIEVAL_GRPC_URL);

  const answers = new AnswerService({
    documents,
    retrieval,
    model,
    embeddings: embeddings.model,
    logger,
    recordUsage: async (orgId, source, modelName, usage) => {
      recordModelTokens(modelName || 'embedded', usage); // [telemetry]
      const event: TokensRecordedEvent = { id: randomUUID(), orgId, source, model: modelName, ...usage, at: new Date().toISOString() };
      await publishEvent(nc, UsageSubjects.tokensRecorded, event, event.id);
    },
  });
  const batches = new BatchesService({
    repository: new BatchesRepository(db, batchEvents),
    answers,
    logger,
    publish: (event, msgId) => publishEvent(nc, AgentSubjects.batchQuestion, event, msgId),
  });
  const consumer = await runConsumer<BatchQuestionEvent>(nc, {
    stream: AGENT_STREAM,
    durable: 'agent-batch-questions',
    filterSubject: AgentSubjects.batchQuestion,
    ackWaitMs: config.AGENT_BATCH_ACK_WAIT_MS,
    maxDeliver: 5,
    concurrency: config.AGENT_BATCH_CONCURRENCY,
    logger,
    handler: (event, delivery) => batches.processQuestion(event, delivery),
  });

  const { chatStream, ...unary } = agentV1.AgentServiceService;
  const grpcServer = await runtime.serveGrpc({
    services: [{ name: 'kb.agent.v1.AgentService', definition: unary satisfies AgentUnaryDefinition, handlers: agentUnaryHandlers(answers, batches) }],
  });
  // The shared gRPC helper adapts unary methods only; the server-streaming method is added here.
  grpcServer.server.addService({ chatStream }, { chatStream: chatStreamHandler(answers, logger) });
  logger.info({ model: answers.modelName, embeddings: embeddings.model?.model ?? null, batch_concurrency: config.AGENT_BATCH_CONCURRENCY }, 'agent ready');
  return () => consumer.stop();
});

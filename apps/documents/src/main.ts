import '@kb/telemetry/register'; // [telemetry] must stay the first import (instruments grpc/http)
import { AppError, bootService, ErrorCode, env, publishEvent, runConsumer, sharedEnv, storageConfigFromEnv } from '@kb/common';
import {
  DOCUMENTS_STREAM,
  DOCUMENTS_STREAM_SUBJECTS,
  DocumentsDeletedEvent,
  ProgressChangedEvent,
  StatusChangedEvent,
  Subjects,
  natsWithWebhookOutbox,
} from '@kb/events';
import { chunkFromProto } from '@kb/knowledge';
import { documentsV1, retrievalV1 } from '@kb/proto';
import { createObjectStorage } from '@kb/storage';
import { openDocumentsDatabase } from './database/database';
import { documentEvents } from './documents/document-events';
import { DocumentsRepository } from './documents/documents.repository';
import { DocumentsService } from './documents/documents.service';
import { ProcessingOutcomes } from './documents/processing-outcomes';
import { documentsGrpcHandlers } from './grpc/documents.grpc-controller';
import { ProjectsRepository } from './projects/projects.repository';
import { ProjectsService } from './projects/projects.service';

/** The documents service's settings (README "Configuration"); bootService validates them with its own at start. */
const documentsEnv = {
  ...sharedEnv.database,
  ...sharedEnv.nats,
  ...sharedEnv.storage,
  RETRIEVAL_GRPC_URL: sharedEnv.clients.RETRIEVAL_GRPC_URL,
  /** A document still processing after this long is failed by the sweeper. */
  PROCESSING_TIMEOUT_MS: env.int(30 * 60 * 1000),
  SWEEP_INTERVAL_MS: env.int(60 * 1000),
  ...sharedEnv.webhookOutbox,
};

bootService({ name: 'documents', metricsPort: 9461, grpcPort: 50051, env: documentsEnv }, async ({ runtime, logger, config }) => {
  const db = await runtime.database(openDocumentsDatabase(config.DATABASE_URL));
  const storage = createObjectStorage(storageConfigFromEnv(config));
  await storage.ensureReady();
  // Webhook events written with document state changes (docs/webhooks.md) go out from here.
  const nc = await natsWithWebhookOutbox(runtime, db, config, [[DOCUMENTS_STREAM, DOCUMENTS_STREAM_SUBJECTS]]);
  const retrieval = runtime.client(retrievalV1.RetrievalServiceService, config.RETRIEVAL_GRPC_URL);

  const deleteIndexedChunks = async (orgId: string, documentIds: string[]) => {
    await retrieval.deleteDocuments({ documentIds, corpus: retrievalV1.Corpus.CORPUS_ORG }, { orgId });
  };
  const chunks = {
    list: async (orgId: string, documentId: string, limit: number, offset: number) => {
      const res = await retrieval.listChunks({ documentId, limit, offset }, { orgId });
      return { chunks: res.chunks.map(chunkFromProto), total: res.total };
    },
    get: async (orgId: string, documentId: string, chunkId: string) => {
      try {
        return chunkFromProto(await retrieval.getChunk({ documentId, chunkId }, { orgId }));
      } catch (error) {
        if (error instanceof AppError && error.code === ErrorCode.NOT_FOUND) return null;
        throw error;
      }
    },
  };
  const repository = new DocumentsRepository(db, documentEvents);
  const projects = new ProjectsService(new ProjectsRepository(db));
  const documents = new DocumentsService({
    repository,
    projects,
    storage,
    publishProcessRequested: (event) => publishEvent(nc, Subjects.processRequested, event, `process:${event.documentId}`),
    deleteIndexedChunks,
    chunks,
    publishDeleted: (orgId, documentIds) =>
      publishEvent(nc, Subjects.deleted, { orgId, documentIds, at: new Date().toISOString() } satisfies DocumentsDeletedEvent),
  });
  const outcomes = new ProcessingOutcomes(repository, deleteIndexedChunks, logger);

  const consumer = await runConsumer<StatusChangedEvent>(nc, {
    stream: DOCUMENTS_STREAM,
    durable: 'documents-status',
    filterSubject: Subjects.statusChanged,
    maxDeliver: 20,
    concurrency: 8,
    logger,
    handler: (event) => outcomes.onStatusChanged(event),
  });
  const progressConsumer = await runConsumer<ProgressChangedEvent>(nc, {
    stream: DOCUMENTS_STREAM,
    durable: 'documents-progress',
    filterSubject: Subjects.progressChanged,
    maxDeliver: 5,
    concurrency: 8,
    logger,
    handler: (event) => outcomes.onProgressChanged(event),
  });
  const sweeper = setInterval(() => {
    outcomes.sweep(config.PROCESSING_TIMEOUT_MS).catch((err) => logger.error({ err }, 'sweep failed'));
    documents.sweepClosedUploads(new Date()).catch((err) => logger.error({ err }, 'upload sweep failed'));
  }, config.SWEEP_INTERVAL_MS);

  const grpc = await runtime.serveGrpc({
    services: [
      {
        name: 'kb.documents.v1.DocumentsService',
        definition: documentsV1.DocumentsServiceService,
        handlers: documentsGrpcHandlers(projects, documents),
      },
    ],
  });
  logger.info({ port: grpc.port }, 'documents gRPC listening');
  return async () => {
    clearInterval(sweeper);
    await consumer.stop();
    await progressConsumer.stop();
  };
});

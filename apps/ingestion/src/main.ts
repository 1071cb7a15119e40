import '@kb/telemetry/register'; // [telemetry] must stay the first import (instruments grpc/http)
import { bootService, env, JETSTREAM_ACK_WAIT_MS, publishEvent, runConsumer, sharedEnv, storageConfigFromEnv } from '@kb/common';
import { DOCUMENTS_STREAM, DOCUMENTS_STREAM_SUBJECTS, ProcessRequestedEvent, StatusChangedEvent, Subjects, ProgressChangedEvent } from '@kb/events';
import { retrievalV1 } from '@kb/proto';
import { createObjectStorage } from '@kb/storage';
import { mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { closeExtractionWorkers } from './extraction';
import { processRequestProblem, publishDeadLetter, watchMaxDeliveries } from './pipeline/dead-letter';
import { DocumentProcessor } from './pipeline/document-processor';
import { ReadyFirstGate } from './pipeline/ready-first';
import { WorkLimiter } from './pipeline/work-limiter';
import { metrics } from '@kb/telemetry'; // [telemetry]

/** The ingestion service's settings (README "Configuration"); bootService validates them with its own at start. */
const ingestionEnv = {
  ...sharedEnv.nats,
  ...sharedEnv.storage,
  RETRIEVAL_GRPC_URL: sharedEnv.clients.RETRIEVAL_GRPC_URL,
  /** Documents in flight at once on this replica (their I/O overlaps; CPU work is bounded below). */
  INGESTION_CONCURRENCY: env.int(2),
  /** Documents extracted (text extraction, chunking, OCR) at once on this replica: the CPU-bound part. */
  INGESTION_EXTRACTION_CONCURRENCY: env.int(2),
  /** Documents in their enrichment steps (OCR of deferred pages, embeddings) at once on this replica; the others extract and become `ready` meanwhile. */
  INGESTION_ENRICHMENT_CONCURRENCY: env.int(2),
  /**
   * Documents delivered and not yet acknowledged, for the durable consumer as a whole (every replica): those before
   * `ready` are bounded by INGESTION_CONCURRENCY per replica, the rest are `ready` and wait for enrichment. Bounds how far
   * `ready` runs ahead of `completed` in a bulk upload (docs/ingestion.md "Throughput and scaling").
   */
  INGESTION_MAX_ACK_PENDING: env.int(256),
  /** Declared size (bytes) of the documents in flight at once; a larger document runs alone. Bounds memory and work-dir use. */
  INGESTION_INFLIGHT_BYTES: env.int(64 * 1024 * 1024),
  /** Per-document time limit (extraction, OCR and enrichment together). */
  INGESTION_TIMEOUT_MS: env.int(10 * 60 * 1000),
  /** Largest number of pages (PDF pages, slides, sheets, image frames) per document. */
  INGESTION_MAX_PAGES: env.int(5000),
  /** Largest extracted text per document, bytes (32 MiB keeps one document's chunks in one index call). */
  INGESTION_MAX_TEXT_BYTES: env.int(32 * 1024 * 1024),
  /** Largest declared uncompressed size of a DOCX/XLSX/PPTX package, bytes (zip-bomb guard). */
  INGESTION_MAX_UNZIPPED_BYTES: env.int(1024 * 1024 * 1024),
  /** Heap cap (MB) of the worker thread that parses one DOCX/XLSX/PPTX/HTML file; beyond it the document fails. */
  INGESTION_EXTRACTION_HEAP_MB: env.int(1024),
  /** Chunk size target and overlap, characters. */
  INGESTION_CHUNK_CHARS: env.int(1200),
  INGESTION_CHUNK_OVERLAP_CHARS: env.int(150),
  /** Backoff before a failed delivery is retried: this times the attempt number (ms). */
  INGESTION_RETRY_DELAY_MS: env.int(5_000),
  /** Deliveries of one document before it is failed. */
  INGESTION_MAX_ATTEMPTS: env.int(3),
  INGESTION_WORK_DIR: env.string(path.join(os.tmpdir(), 'kb-ingestion')),
  /** Redelivery delay of a document whose worker stopped sending progress (crashed); the platform's JetStream ack wait by default. */
  INGESTION_ACK_WAIT_MS: env.int(JETSTREAM_ACK_WAIT_MS),
};

bootService({ name: 'ingestion', metricsPort: 9462, grpcPort: 50052, env: ingestionEnv }, async ({ runtime, logger, config }) => {
  await mkdir(config.INGESTION_WORK_DIR, { recursive: true });
  const storage = createObjectStorage(storageConfigFromEnv(config));
  await storage.ensureReady();
  const retrieval = runtime.client(retrievalV1.RetrievalServiceService, config.RETRIEVAL_GRPC_URL);
  const nc = await runtime.nats(config.NATS_URL, [[DOCUMENTS_STREAM, DOCUMENTS_STREAM_SUBJECTS]]);

  const indexChunks = async (orgId: string, request: retrievalV1.IndexDocumentRequest) => {
    await retrieval.indexDocument(request, { orgId, timeoutMs: 5 * 60 * 1000 });
  };
  const deleteChunks = async (orgId: string, documentId: string) => {
    await retrieval.deleteDocuments({ documentIds: [documentId], corpus: retrievalV1.Corpus.CORPUS_ORG }, { orgId });
  };
  const publishStatus = async (event: StatusChangedEvent) => {
    await publishEvent(nc, Subjects.statusChanged, event, `status:${event.documentId}:${event.status}`);
    // [telemetry] documents finished and pages extracted (rate() = pages/s)
    if (event.status === 'completed') metrics.ingestionPages.inc(event.pageCount ?? 0);
    if (event.status === 'completed' || event.status === 'failed') metrics.ingestionDocuments.inc({ outcome: event.status });
  };
  const processor = new DocumentProcessor({
    storage,
    indexChunks,
    deleteChunks,
    publishStatus,
    publishProgress: (event: ProgressChangedEvent) => publishEvent(nc, Subjects.progressChanged, event),
    embedDocument: async (orgId, documentId) => {
      await retrieval.embedDocument({ documentId, corpus: retrievalV1.Corpus.CORPUS_ORG }, { orgId, timeoutMs: 10 * 60 * 1000 });
    },
    workDir: config.INGESTION_WORK_DIR,
    logger,
    inflightBytes: new WorkLimiter(config.INGESTION_INFLIGHT_BYTES),
    extractionSlots: new WorkLimiter(config.INGESTION_EXTRACTION_CONCURRENCY),
    enrichmentSlots: new WorkLimiter(config.INGESTION_ENRICHMENT_CONCURRENCY),
    readyFirst: new ReadyFirstGate(),
    timeoutMs: config.INGESTION_TIMEOUT_MS,
    maxPages: config.INGESTION_MAX_PAGES,
    maxTextBytes: config.INGESTION_MAX_TEXT_BYTES,
    maxUnzippedBytes: config.INGESTION_MAX_UNZIPPED_BYTES,
    maxHeapMb: config.INGESTION_EXTRACTION_HEAP_MB,
    chunkOptions: {
      targetChars: config.INGESTION_CHUNK_CHARS,
      maxChars: Math.max(config.INGESTION_CHUNK_CHARS, Math.round((config.INGESTION_CHUNK_CHARS * 5) / 3)),
      overlapChars: config.INGESTION_CHUNK_OVERLAP_CHARS,
    },
  });
  const stopDeadLetters = watchMaxDeliveries({ nc, logger, durable: 'ingestion', publishStatus, deleteChunks });
  const consumer = await runConsumer<ProcessRequestedEvent>(nc, {
    stream: DOCUMENTS_STREAM,
    durable: 'ingestion',
    filterSubject: Subjects.processRequested,
    ackWaitMs: config.INGESTION_ACK_WAIT_MS,
    maxDeliver: config.INGESTION_MAX_ATTEMPTS,
    concurrency: config.INGESTION_CONCURRENCY,
    maxAckPending: config.INGESTION_MAX_ACK_PENDING,
    retryDelayMs: config.INGESTION_RETRY_DELAY_MS,
    logger,
    // One run per document at a time in this process: a second delivery of a document in progress
    // (a redelivery racing the first, seen with nats-server 2.9: docs/ingestion.md) waits for it.
    singleFlightKey: (event) => (typeof event?.documentId === 'string' ? event.documentId : null),
    handler: async (event, delivery) => {
      const problem = processRequestProblem(event);
      if (problem) {
        // Poison message: retrying cannot help. Keep it for operators and acknowledge it.
        logger.error({ problem }, 'malformed process request dead-lettered');
        await publishDeadLetter(nc, {
          subject: Subjects.processRequested,
          streamSequence: null,
          deliveries: delivery.attempt,
          reason: `malformed payload: ${problem}`,
          payload: JSON.stringify(event),
          documentId: null,
          at: new Date().toISOString(),
        });
        return;
      }
      await processor.process(event, delivery);
    },
  });
  // The health-only gRPC server (readiness checks).
  await runtime.serveGrpc({ services: [] });
  return async () => {
    stopDeadLetters();
    await consumer.stop();
    await closeExtractionWorkers();
  };
});

import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppError, createLogger, ErrorCode, startGrpcServer } from '@kb/common';
import { OpenAiEmbeddingModel } from '@kb/models';
import { retrievalV1 } from '@kb/proto';
import { startScriptedEmbeddingsServer } from '../../../../libs/models/src/testing/scripted-embeddings-server';
import { retrievalGrpcHandlers } from '../../../retrieval/src/grpc/retrieval.grpc-controller';
import { RetrievalService } from '../../../retrieval/src/search/retrieval.service';
import { LanceDbChunkStore } from '../../../retrieval/src/store/lancedb-chunk-store';
import { openRetrieval, retrievalConfigFromEnv } from '../../../retrieval/src/retrieval-factory';
import { runReindex } from './reindex';

jest.setTimeout(30_000);

// `kbctl reindex` against a real retrieval gRPC server whose embedding model changed.
it('kbctl reindex re-embeds every document with the configured model over gRPC', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'kb-reindex-'));
  const embeddings = await startScriptedEmbeddingsServer((body) => ({ vectors: body.input.map((t) => [t.length, 1, 0, 0]) }));
  const model = (name: string) =>
    new OpenAiEmbeddingModel({ baseUrl: embeddings.baseUrl, model: name, dimensions: 4, batchSize: 8, timeoutMs: 5000, maxRetries: 0 });
  const orgId = randomUUID();
  const documentId = randomUUID();
  let store = await LanceDbChunkStore.open(dir);
  const first = new RetrievalService(store, { embeddings: model('old-model') });
  await first.init();
  await first.indexDocument(orgId, documentId, [textChunk(orgId, documentId, 'Fire doors stay closed.')]);
  await first.embedDocument(orgId, documentId);
  await store.close();

  store = await LanceDbChunkStore.open(dir);
  const service = new RetrievalService(store, { embeddings: model('new-model') });
  expect((await service.init()).state).toBe('stale');
  const logger = createLogger('retrieval-test');
  const grpc = await startGrpcServer({
    host: '127.0.0.1',
    port: 0,
    logger,
    services: [{ name: 'kb.retrieval.v1.RetrievalService', definition: retrievalV1.RetrievalServiceService, handlers: retrievalGrpcHandlers(service) }],
  });
  try {
    expect(await runReindex({ RETRIEVAL_GRPC_URL: `127.0.0.1:${grpc.port}` })).toEqual({ documents: 1, chunks: 1, model: 'new-model', dimensions: 4 });
    expect(service.denseState()).toEqual({ state: 'ready', space: { model: 'new-model', dimensions: 4 } });
    const err = await runReindex({ RETRIEVAL_GRPC_URL: '127.0.0.1:9' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe(ErrorCode.SERVICE_UNAVAILABLE);
  } finally {
    await grpc.shutdown();
    await store.close();
    await embeddings.close();
    await rm(dir, { recursive: true, force: true });
  }
});

/** Starts the retrieval gRPC handlers of `service` on a free port. */
/** The one chunk of an organization-level text document `a.txt` (no headings, no pages), as indexDocument takes it. */
function textChunk(orgId: string, documentId: string, text: string): Parameters<RetrievalService['indexDocument']>[2][number] {
  return {
    id: randomUUID(),
    orgId,
    projectId: null,
    documentId,
    fileName: 'a.txt',
    chunkIndex: 0,
    text,
    headingPath: [],
    startPage: null,
    endPage: null,
    pageSpans: [],
    wordBoxes: [],
  };
}

async function serve(service: RetrievalService) {
  return startGrpcServer({
    host: '127.0.0.1',
    port: 0,
    logger: createLogger('retrieval-test'),
    services: [{ name: 'kb.retrieval.v1.RetrievalService', definition: retrievalV1.RetrievalServiceService, handlers: retrievalGrpcHandlers(service) }],
  });
}

// The local provider: documents indexed while the model was missing (lexical only) get vectors
// once the model is in KB_MODELS_DIR and `kbctl reindex` runs; without the model it says why.
it('kbctl reindex with the local model: refuses while it is missing, embeds lexical-only documents once it is there', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'kb-reindex-local-'));
  const emptyModels = await mkdtemp(join(tmpdir(), 'kb-no-models-'));
  const orgId = randomUUID();
  const documentId = randomUUID();
  const chunk = textChunk(orgId, documentId, 'Hard hats are worn on site.');
  let opened = await openRetrieval(retrievalConfigFromEnv({ RETRIEVAL_DATA_DIR: dir, KB_MODELS_DIR: emptyModels }));
  let grpc = await serve(opened.service);
  try {
    await opened.service.indexDocument(orgId, documentId, [chunk]);
    const err = await runReindex({ RETRIEVAL_GRPC_URL: `127.0.0.1:${grpc.port}` }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe(ErrorCode.VALIDATION_ERROR);
    expect((err as AppError).message).toMatch(/No embedding model is loaded \(the embedding model Xenova\/all-MiniLM-L6-v2 is not in/);
  } finally {
    await grpc.shutdown();
    await opened.close();
  }
  opened = await openRetrieval(
    retrievalConfigFromEnv({ RETRIEVAL_DATA_DIR: dir, KB_MODELS_DIR: join(__dirname, '../../../../../shared/models'), EMBEDDINGS_MODEL: 'all-MiniLM-L6-v2' }),
  );
  grpc = await serve(opened.service);
  try {
    expect((await opened.service.search('protective headgear', { orgId }, 3)).hits).toEqual([]); // no vectors yet
    expect(await runReindex({ RETRIEVAL_GRPC_URL: `127.0.0.1:${grpc.port}` })).toEqual({ documents: 1, chunks: 1, model: 'all-MiniLM-L6-v2', dimensions: 384 });
    const res = await opened.service.search('protective headgear', { orgId }, 3);
    expect(res).toMatchObject({ mode: 'hybrid', hits: [{ chunk: { id: chunk.id } }] });
  } finally {
    await grpc.shutdown();
    await opened.close();
    await rm(dir, { recursive: true, force: true });
    await rm(emptyModels, { recursive: true, force: true });
  }
});

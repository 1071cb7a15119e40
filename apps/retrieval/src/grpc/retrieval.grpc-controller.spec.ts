import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppError, ErrorCode } from '@kb/common';
import { OpenAiEmbeddingModel } from '@kb/models';
import { retrievalV1 } from '@kb/proto';
import { LanceDbChunkStore } from '../store/lancedb-chunk-store';
import { RetrievalService } from '../search/retrieval.service';
import { retrievalGrpcHandlers } from './retrieval.grpc-controller';

jest.setTimeout(30_000);

const ctx = { orgId: randomUUID(), requestId: randomUUID() };
const chunk = (documentId: string, text: string): retrievalV1.Chunk => ({
  id: randomUUID(),
  documentId,
  fileName: 'a.pdf',
  chunkIndex: 0,
  text,
  headingPath: ['Fire safety'],
  pageSpans: [],
  wordBoxes: [],
});

let dir: string;
let store: LanceDbChunkStore;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kb-retrieval-grpc-'));
  store = await LanceDbChunkStore.open(dir);
});
afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

async function code(promise: Promise<unknown>): Promise<string | undefined> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  return err instanceof AppError ? err.code : String(err);
}

describe('retrieval gRPC handlers', () => {
  it('index, search (mode reported), embed as a no-op without a model, reindex refused', async () => {
    const service = new RetrievalService(store);
    await service.init();
    const h = retrievalGrpcHandlers(service);
    const documentId = randomUUID();
    expect(await h.indexDocument({ documentId, chunks: [chunk(documentId, 'Extinguishers are inspected monthly.')], corpus: 0 }, ctx)).toEqual({
      chunkCount: 1,
    });

    const res = await h.search({ query: 'fire extinguisher', documentIds: [], excludeDocumentIds: [], topK: 5, corpus: 0 }, ctx);
    expect(res.mode).toBe('lexical');
    expect(res.degradedReason).toBe('');
    expect(res.hits.map((x) => x.chunk?.documentId)).toEqual([documentId]);

    expect(await h.embedDocument({ documentId, corpus: 0 }, ctx)).toEqual({ chunksEmbedded: 0, skippedReason: 'no embedding model is configured' });
    expect(await code(h.embedDocument({ documentId: 'not-a-uuid', corpus: 0 }, ctx))).toBe(ErrorCode.VALIDATION_ERROR);
    expect(await code(h.reindex({}, ctx))).toBe(ErrorCode.VALIDATION_ERROR);
  });

  it("ListChunks and GetChunk serve the caller's org only, a chunk only under its own document", async () => {
    const service = new RetrievalService(store);
    await service.init();
    const h = retrievalGrpcHandlers(service);
    const documentId = randomUUID();
    const chunks = ['First clause.', 'Second clause.', 'Third clause.'].map((text, i) => ({ ...chunk(documentId, text), chunkIndex: i }));
    await h.indexDocument({ documentId, chunks: [chunks[2], chunks[0], chunks[1]], corpus: 0 }, ctx);

    const page = await h.listChunks({ documentId, limit: 2, offset: 1 }, ctx);
    expect(page.total).toBe(3);
    expect(page.chunks.map((c) => [c.chunkIndex, c.text, c.headingPath])).toEqual([
      [1, 'Second clause.', ['Fire safety']],
      [2, 'Third clause.', ['Fire safety']],
    ]);
    expect((await h.getChunk({ documentId, chunkId: chunks[1].id }, ctx)).text).toBe('Second clause.');

    const other = { orgId: randomUUID(), requestId: randomUUID() };
    expect(await h.listChunks({ documentId, limit: 10, offset: 0 }, other)).toEqual({ chunks: [], total: 0 });
    expect(await code(h.getChunk({ documentId, chunkId: chunks[1].id }, other))).toBe(ErrorCode.NOT_FOUND);
    expect(await code(h.getChunk({ documentId: randomUUID(), chunkId: chunks[1].id }, ctx))).toBe(ErrorCode.NOT_FOUND);
    expect(await code(h.getChunk({ documentId, chunkId: 'x' }, ctx))).toBe(ErrorCode.VALIDATION_ERROR);
    expect(await code(h.listChunks({ documentId, limit: 5000, offset: 0 }, ctx))).toBe(ErrorCode.VALIDATION_ERROR);
  });

  it('an unreachable embeddings provider makes EmbedDocument SERVICE_UNAVAILABLE (ingestion retries)', async () => {
    const broken = new OpenAiEmbeddingModel({ baseUrl: 'http://127.0.0.1:9/v1', model: 'm', dimensions: 4, batchSize: 4, timeoutMs: 500, maxRetries: 0 });
    const service = new RetrievalService(store, { embeddings: broken });
    await service.init();
    const h = retrievalGrpcHandlers(service);
    const documentId = randomUUID();
    await h.indexDocument({ documentId, chunks: [chunk(documentId, 'Fire doors stay closed.')], corpus: 0 }, ctx);
    expect(await code(h.embedDocument({ documentId, corpus: 0 }, ctx))).toBe(ErrorCode.SERVICE_UNAVAILABLE);
    const res = await h.search({ query: 'fire doors', documentIds: [], excludeDocumentIds: [], topK: 5, corpus: 0 }, ctx);
    expect(res.hits).toHaveLength(1);
    expect(res.degradedReason).toMatch(/dense search failed/);
  });
});

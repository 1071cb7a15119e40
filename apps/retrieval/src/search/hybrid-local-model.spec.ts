// Hybrid search with the real in-process embedding model (MiniLM from ../shared/models) on the real
// embedded store: what a user gains from it, shown on a paraphrase that shares no word with the text.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { embeddingsConfigFromEnv, LocalEmbeddingModel, openEmbeddingModel } from '@kb/models';
import { makeChunk } from '../store/chunk-store.contract';
import { LanceDbChunkStore } from '../store/lancedb-chunk-store';
import { RetrievalService } from './retrieval.service';
import { openRetrieval, retrievalConfigFromEnv } from '../retrieval-factory';

jest.setTimeout(120_000);

const MODELS_DIR = path.resolve(__dirname, '../../../../../shared/models');
const ORG = 'org-paraphrase';
const DOCS = {
  hardHats: 'Hard hats must be worn at all times by everyone on the construction site.',
  lunch: 'The cafeteria serves lunch from noon until two in the afternoon.',
  invoices: 'Invoices are paid within thirty days of receipt by the accounts department.',
  extinguishers: 'Fire extinguishers are inspected every month and tagged with the date.',
  parking: 'Visitors park in the north lot and sign in at reception.',
};
/** Shares no word (nor stem) with any document. */
const PARAPHRASE = 'protective headgear required for builders';

let model: LocalEmbeddingModel;
const dirs: string[] = [];
beforeAll(async () => {
  model = await LocalEmbeddingModel.load({ modelsDir: MODELS_DIR, model: 'all-MiniLM-L6-v2' });
});
afterAll(async () => {
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

async function seeded(service: RetrievalService) {
  const ids: Record<string, string> = {};
  for (const [name, text] of Object.entries(DOCS)) {
    ids[name] = randomUUID();
    await service.indexDocument(ORG, ids[name], [makeChunk({ orgId: ORG, documentId: ids[name], text })]);
    await service.embedDocument(ORG, ids[name]);
  }
  return ids;
}

async function tempDir() {
  const d = await mkdtemp(path.join(tmpdir(), 'kb-hybrid-'));
  dirs.push(d);
  return d;
}

describe('hybrid search with the local MiniLM model', () => {
  it('finds the right document for a paraphrase only with hybrid on; BM25 alone finds nothing', async () => {
    const store = await LanceDbChunkStore.open(await tempDir(), { optimizeDelayMs: 50 });
    try {
      const hybrid = new RetrievalService(store, { embeddings: model });
      expect((await hybrid.init()).state).toBe('ready');
      const ids = await seeded(hybrid);
      const lexical = new RetrievalService(store);

      const bm25 = await lexical.search(PARAPHRASE, { orgId: ORG }, 3);
      expect(bm25).toEqual({ hits: [], mode: 'lexical' });

      const res = await hybrid.search(PARAPHRASE, { orgId: ORG }, 3);
      expect(res.mode).toBe('hybrid');
      expect(res.degradedReason).toBeUndefined();
      expect(res.hits[0].chunk.documentId).toBe(ids.hardHats);

      // A lexical query still ranks its exact match first under fusion.
      const exact = await hybrid.search('invoices accounts department', { orgId: ORG }, 3);
      expect(exact.hits[0].chunk.documentId).toBe(ids.invoices);
    } finally {
      await store.close();
    }
  });

  it('a configured but missing model: lexical search that says why on every search', async () => {
    const opened = await openRetrieval(retrievalConfigFromEnv({ RETRIEVAL_DATA_DIR: await tempDir(), KB_MODELS_DIR: await tempDir() }));
    try {
      expect(opened.describe()).toMatchObject({ embeddings: { provider: 'local', off: expect.stringMatching(/Xenova\/all-MiniLM-L6-v2 is not in/) } });
      const doc = randomUUID();
      await opened.service.indexDocument(ORG, doc, [makeChunk({ orgId: ORG, documentId: doc, text: DOCS.hardHats })]);
      for (const query of ['hard hats', PARAPHRASE]) {
        const res = await opened.service.search(query, { orgId: ORG }, 3);
        expect(res.mode).toBe('lexical');
        expect(res.degradedReason).toMatch(/embedding model Xenova\/all-MiniLM-L6-v2 is not in .*lexical only/);
      }
      expect((await opened.service.search('hard hats', { orgId: ORG }, 3)).hits).toHaveLength(1);
      expect(await opened.service.embedDocument(ORG, doc)).toEqual({ embedded: 0, skipped: expect.stringMatching(/is not in/) });
    } finally {
      await opened.close();
    }
  });

  it('EMBEDDINGS_PROVIDER=none is lexical by choice: no degraded reason', async () => {
    const opened = await openRetrieval(retrievalConfigFromEnv({ RETRIEVAL_DATA_DIR: await tempDir(), EMBEDDINGS_PROVIDER: 'none' }));
    try {
      const doc = randomUUID();
      await opened.service.indexDocument(ORG, doc, [makeChunk({ orgId: ORG, documentId: doc, text: DOCS.hardHats })]);
      expect(await opened.service.search('hard hats', { orgId: ORG }, 3)).toEqual({ hits: [expect.anything()], mode: 'lexical' });
    } finally {
      await opened.close();
    }
  });

  it('works offline from a local copy: the factory loads the shared model and searches hybrid', async () => {
    expect((await openEmbeddingModel(embeddingsConfigFromEnv({ KB_MODELS_DIR: MODELS_DIR, EMBEDDINGS_MODEL: 'all-MiniLM-L6-v2' }))).model?.dimensions).toBe(
      384,
    );
    const opened = await openRetrieval(
      retrievalConfigFromEnv({ RETRIEVAL_DATA_DIR: await tempDir(), KB_MODELS_DIR: MODELS_DIR, EMBEDDINGS_MODEL: 'all-MiniLM-L6-v2' }),
    );
    try {
      expect(opened.describe()).toMatchObject({ dense: { state: 'ready', space: { model: 'all-MiniLM-L6-v2', dimensions: 384 } } });
      const ids = await seeded(opened.service);
      const res = await opened.service.search(PARAPHRASE, { orgId: ORG }, 1);
      expect(res).toMatchObject({ mode: 'hybrid', hits: [{ chunk: { documentId: ids.hardHats } }] });
    } finally {
      await opened.close();
    }
  });
});

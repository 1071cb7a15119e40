import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ModelProviderError, OpenAiEmbeddingModel, verifyEmbeddingModel } from '@kb/models';
import { startScriptedEmbeddingsServer, ScriptedEmbeddingsServer } from '../../../../libs/models/src/testing/scripted-embeddings-server';
import { makeChunk } from '../store/chunk-store.contract';
import { LanceDbChunkStore } from '../store/lancedb-chunk-store';
import { convexCombination, fuse, reciprocalRankFusion } from './fusion';
import { EMBED_PAGE_CHUNKS, RetrievalService } from './retrieval.service';

jest.setTimeout(30_000);

// A tiny "semantic" embedding served over the real OpenAI protocol: words are mapped to concepts
// (so "blaze" and "fire" meet, which BM25 cannot do), then hashed into DIMS buckets, L2-normalized.
const DIMS = 16;
const CONCEPTS: Record<string, string> = { blaze: 'fire', flames: 'fire', fire: 'fire', inferno: 'fire', helmet: 'head', hardhat: 'head' };
function embedText(text: string, dims = DIMS): number[] {
  const v: number[] = new Array<number>(dims).fill(0);
  for (const w of text.toLowerCase().match(/[a-z]+/g) ?? []) {
    const c = CONCEPTS[w];
    if (!c) continue;
    let h = 0;
    for (const ch of c) h = (h * 31 + ch.charCodeAt(0)) % dims;
    v[h] += 1;
  }
  if (!v.some((x) => x !== 0)) v[dims - 1] = 0.01;
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
}

let server: ScriptedEmbeddingsServer;
let dims = DIMS;
const dirs: string[] = [];
beforeAll(async () => {
  server = await startScriptedEmbeddingsServer((body) => ({ vectors: body.input.map((t) => embedText(t, dims)) }));
});
afterAll(async () => {
  await server.close();
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});
beforeEach(() => {
  dims = DIMS;
});

const model = (name = 'concept-embed', d = DIMS, batchSize = 8) =>
  new OpenAiEmbeddingModel({ baseUrl: server.baseUrl, model: name, dimensions: d, batchSize, timeoutMs: 5000, maxRetries: 2 });

async function openStore(dir?: string) {
  const at = dir ?? (await mkdtemp(join(tmpdir(), 'kb-retrieval-svc-')));
  if (!dir) dirs.push(at);
  return { dir: at, store: await LanceDbChunkStore.open(at, { optimizeDelayMs: 50 }) };
}

const ORG = 'org-a';
const OTHER = 'org-b';

async function seed(service: RetrievalService) {
  const p1 = randomUUID();
  const p2 = randomUUID();
  const docs = { orgLevel: randomUUID(), inP1: randomUUID(), inP2: randomUUID(), other: randomUUID() };
  const chunks = {
    orgLevel: [makeChunk({ orgId: ORG, documentId: docs.orgLevel, text: 'Portable fire extinguishers are inspected monthly.' })],
    inP1: [makeChunk({ orgId: ORG, documentId: docs.inP1, projectId: p1, text: 'Flames near fuel tanks require a hot-work permit.' })],
    inP2: [makeChunk({ orgId: ORG, documentId: docs.inP2, projectId: p2, text: 'An inferno in the warehouse is fought by the brigade.' })],
    other: [makeChunk({ orgId: OTHER, documentId: docs.other, text: 'Fire fire fire: the best matching text of all.' })],
    unrelated: [makeChunk({ orgId: ORG, documentId: randomUUID(), text: 'Safety helmets are worn on construction sites.' })],
  };
  for (const list of Object.values(chunks)) {
    await service.indexDocument(list[0].orgId, list[0].documentId, list);
    await service.embedDocument(list[0].orgId, list[0].documentId);
  }
  return { p1, p2, docs, chunks };
}

describe('RetrievalService', () => {
  it('without an embedding model: lexical search, and embedding a document is a reported no-op', async () => {
    const { store } = await openStore();
    const service = new RetrievalService(store);
    expect(await service.init()).toEqual({ state: 'off', reason: 'no embedding model is configured' });
    const { chunks } = await seed(service);
    expect(await service.embedDocument(ORG, chunks.orgLevel[0].documentId)).toEqual({ embedded: 0, skipped: 'no embedding model is configured' });
    const res = await service.search('blaze', { orgId: ORG }, 5);
    expect(res).toEqual({ hits: [], mode: 'lexical' }); // BM25 cannot know "blaze" means fire
    expect((await service.search('extinguishers', { orgId: ORG }, 5)).hits.map((h) => h.chunk.id)).toEqual([chunks.orgLevel[0].id]);
    await store.close();
  });

  it('hybrid search finds what BM25 misses, fused by RRF, within org, project scope and document ids', async () => {
    const { store } = await openStore();
    const service = new RetrievalService(store, { embeddings: model() });
    expect((await service.init()).state).toBe('ready');
    const { p1, p2, docs, chunks } = await seed(service);

    const all = await service.search('blaze', { orgId: ORG }, 10);
    expect(all.mode).toBe('hybrid');
    // Dense-only matches: the three fire chunks of this org, never org B's, ranked above the helmet chunk.
    expect(new Set(all.hits.slice(0, 3).map((h) => h.chunk.documentId))).toEqual(new Set([docs.orgLevel, docs.inP1, docs.inP2]));
    expect(all.hits.every((h) => h.chunk.orgId === ORG)).toBe(true);
    expect(all.hits.map((h) => h.rank)).toEqual(all.hits.map((_, i) => i + 1));

    const scoped = await service.search('blaze', { orgId: ORG, projectId: p1 }, 10);
    expect(new Set(scoped.hits.map((h) => h.chunk.documentId)).has(docs.inP2)).toBe(false);
    expect(
      scoped.hits
        .slice(0, 2)
        .map((h) => h.chunk.documentId)
        .sort(),
    ).toEqual([docs.orgLevel, docs.inP1].sort());
    const inP2 = await service.search('blaze', { orgId: ORG, projectId: p2, documentIds: [docs.inP2, docs.inP1] }, 10);
    expect(inP2.hits.map((h) => h.chunk.id)).toEqual([chunks.inP2[0].id]);

    const theirs = await service.search('blaze', { orgId: OTHER }, 10);
    expect(theirs.hits.map((h) => h.chunk.id)).toEqual([chunks.other[0].id]);
    await store.close();
  });

  it('reads only the chunks of the hits it returns, with the same hits as fusing every dense hit; a chunk deleted meanwhile is replaced', async () => {
    const { store } = await openStore();
    const service = new RetrievalService(store, { embeddings: model() });
    await service.init();
    // 12 one-chunk documents: even ones match "drill" for BM25 and are far from "blaze" in meaning (many helmets);
    // odd ones are close to it (many flames, one helmet: distinct cosines, no ties) and BM25 misses them.
    const org = 'org-drills';
    const docs = Array.from({ length: 12 }, (_, i) => {
      const text = i % 2 ? `Exercise: ${'flames '.repeat(i + 1)}helmet` : `Drill: flames ${'helmet '.repeat(i + 2)}`;
      return makeChunk({ orgId: org, documentId: randomUUID(), text });
    });
    for (const chunk of docs) {
      await service.indexDocument(org, chunk.documentId, [chunk]);
      await service.embedDocument(org, chunk.documentId);
    }
    const scope = { orgId: org };
    const query = 'blaze drill';
    const [vector] = await model().embed([query]);
    const lexical = await store.search(query, scope, 50);
    const fusedAll = fuse(lexical, await store.searchDense(vector, scope, 50), 50, service.fusion);
    const everyChunkRead = fusedAll.slice(0, 4);

    const read = jest.spyOn(store, 'getChunks');
    const res = await service.search(query, scope, 4);
    expect(res.mode).toBe('hybrid');
    expect(res.hits.map((h) => [h.chunk.id, h.score, h.rank])).toEqual(everyChunkRead.map((h, i) => [h.chunk.id, h.score, i + 1]));
    // BM25 brings its hits' chunks; only the returned dense-only hits are read by id (not the 12 dense candidates).
    const lexicalIds = new Set(lexical.map((h) => h.chunk.id));
    const denseOnly = res.hits.filter((h) => !lexicalIds.has(h.chunk.id));
    expect(denseOnly.length).toBeGreaterThan(0);
    expect(read.mock.calls.flatMap(([, ids]) => ids).sort()).toEqual(denseOnly.map((h) => h.chunk.id).sort());

    // A document deleted between the dense search and the chunk read: its hit is skipped, the next takes its place.
    const gone = denseOnly[0].chunk.documentId;
    const searchDenseIds = store.searchDenseIds.bind(store);
    jest.spyOn(store, 'searchDenseIds').mockImplementationOnce(async (v, sc, k) => {
      const hits = await searchDenseIds(v, sc, k);
      await service.deleteDocuments(org, [gone]);
      return hits;
    });
    const after = await service.search(query, scope, 4);
    expect(after.hits.map((h) => h.chunk.id)).toEqual(
      fusedAll
        .filter((h) => h.chunk.documentId !== gone)
        .slice(0, 4)
        .map((h) => h.chunk.id),
    );
    expect(after.hits.map((h) => h.rank)).toEqual([1, 2, 3, 4]);
    await store.close();
  });

  it('re-indexing a document drops its old vectors; deleting it removes it from dense results', async () => {
    const { store } = await openStore();
    const service = new RetrievalService(store, { embeddings: model() });
    await service.init();
    const { docs } = await seed(service);
    const fresh = [makeChunk({ orgId: ORG, documentId: docs.orgLevel, text: 'Exits are signposted.' })];
    await service.indexDocument(ORG, docs.orgLevel, fresh); // not embedded yet
    const hits = (await service.search('blaze', { orgId: ORG }, 10)).hits;
    expect(hits.some((h) => h.chunk.documentId === docs.orgLevel)).toBe(false);
    await service.deleteDocuments(ORG, [docs.inP1]);
    expect((await service.search('blaze', { orgId: ORG }, 10)).hits.map((h) => h.chunk.documentId)).toEqual([docs.inP2, expect.any(String)]);
    await store.close();
  });

  it('a changed embedding model never mixes vector spaces: lexical with a reason until reindex', async () => {
    const { dir, store } = await openStore();
    const first = new RetrievalService(store, { embeddings: model('concept-embed') });
    await first.init();
    const { docs } = await seed(first);
    await store.close();

    // Same dimensions, another model name: still a different space.
    const reopened = await LanceDbChunkStore.open(dir, { optimizeDelayMs: 50 });
    const second = new RetrievalService(reopened, { embeddings: model('other-model') });
    const state = await second.init();
    expect(state).toEqual({
      state: 'stale',
      configured: { model: 'other-model', dimensions: DIMS },
      indexed: { model: 'concept-embed', dimensions: DIMS },
    });
    const degraded = await second.search('blaze', { orgId: ORG }, 10);
    expect(degraded.mode).toBe('lexical');
    expect(degraded.hits).toEqual([]);
    expect(degraded.degradedReason).toMatch(/concept-embed.*other-model.*kbctl reindex/);
    expect((await second.embedDocument(ORG, docs.inP1)).embedded).toBe(0);

    expect(await second.reindex()).toEqual({ documents: 5, chunks: 5 });
    expect(await reopened.vectorSpace()).toEqual({ model: 'other-model', dimensions: DIMS });
    const after = await second.search('blaze', { orgId: ORG }, 10);
    expect(after.mode).toBe('hybrid');
    expect(after.degradedReason).toBeUndefined();
    expect(
      after.hits
        .slice(0, 3)
        .map((h) => h.chunk.documentId)
        .sort(),
    ).toEqual([docs.orgLevel, docs.inP1, docs.inP2].sort());
    await reopened.close();
  });

  it('a failing embeddings provider degrades the search to lexical instead of failing it', async () => {
    const { store } = await openStore();
    const broken = new OpenAiEmbeddingModel({
      baseUrl: 'http://127.0.0.1:9/v1',
      model: 'concept-embed',
      dimensions: DIMS,
      batchSize: 8,
      timeoutMs: 500,
      maxRetries: 0,
    });
    const service = new RetrievalService(store, { embeddings: broken });
    await service.init();
    const d = randomUUID();
    await service.indexDocument(ORG, d, [makeChunk({ orgId: ORG, documentId: d, text: 'Fire doors stay closed.' })]);
    const res = await service.search('fire doors', { orgId: ORG }, 5);
    expect(res.mode).toBe('lexical');
    expect(res.hits).toHaveLength(1);
    expect(res.degradedReason).toMatch(/dense search failed/);
    await expect(service.embedDocument(ORG, d)).rejects.toBeInstanceOf(ModelProviderError);
    await store.close();
  });
});

describe('RetrievalService enrichment', () => {
  it('embeds a large document page by page (bounded memory), at bulk priority, and stores every vector', async () => {
    const { store } = await openStore();
    const inner = model('concept-embed', DIMS, 32);
    const calls: { texts: number; priority?: string }[] = [];
    // A pass-through observer of the real client: records how the service calls it.
    const observed = {
      model: inner.model,
      dimensions: inner.dimensions,
      embed: (texts: string[], signal?: AbortSignal, priority?: 'query' | 'bulk') => {
        calls.push({ texts: texts.length, priority });
        return inner.embed(texts, signal);
      },
    };
    const service = new RetrievalService(store, { embeddings: observed });
    await service.init();
    const doc = randomUUID();
    const total = 2 * EMBED_PAGE_CHUNKS + 88;
    const chunks = Array.from({ length: total }, (_, i) =>
      makeChunk({ orgId: ORG, documentId: doc, chunkIndex: i, text: i === total - 1 ? 'The blaze was contained.' : `Clause ${i} of the handbook.` }),
    );
    await service.indexDocument(ORG, doc, chunks);
    expect(await service.embedDocument(ORG, doc)).toEqual({ embedded: total });
    expect(calls).toEqual([
      { texts: EMBED_PAGE_CHUNKS, priority: 'bulk' },
      { texts: EMBED_PAGE_CHUNKS, priority: 'bulk' },
      { texts: 88, priority: 'bulk' },
    ]);
    // The last page's vectors were stored: the only fire chunk is found by meaning.
    const res = await service.search('inferno', { orgId: ORG }, 3);
    expect(res.mode).toBe('hybrid');
    expect(res.hits[0].chunk.id).toBe(chunks[total - 1].id);
    await store.close();
  });
});

describe('OpenAiEmbeddingModel', () => {
  it('sends batches in order and returns one vector per text', async () => {
    const m = model('concept-embed', DIMS, 2);
    const before = server.requests.length;
    const texts = ['fire', 'blaze', 'helmet', 'x', ''];
    const vectors = await m.embed(texts);
    expect(vectors).toEqual(texts.map((t) => embedText(t === '' ? ' ' : t)));
    expect(server.requests.slice(before).map((r) => r.input.length)).toEqual([2, 2, 1]);
    expect(await m.embed([])).toEqual([]);
  });

  it('the start-up check rejects a provider whose vectors have another length', async () => {
    dims = 8;
    const err = await verifyEmbeddingModel(model()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelProviderError);
    expect((err as ModelProviderError).code).toBe('invalid_output');
    expect((err as Error).message).toMatch(/length 8.*expected 16.*EMBEDDINGS_DIMENSIONS/);
  });

  it('retries a 503 and then succeeds', async () => {
    let calls = 0;
    const flaky = await startScriptedEmbeddingsServer((body) => (calls++ === 0 ? { status: 503 } : { vectors: body.input.map((t) => embedText(t)) }));
    try {
      const m = new OpenAiEmbeddingModel({ baseUrl: flaky.baseUrl, model: 'm', dimensions: DIMS, batchSize: 4, timeoutMs: 5000, maxRetries: 2 });
      expect(await m.embed(['fire'])).toEqual([embedText('fire')]);
      expect(calls).toBe(2);
    } finally {
      await flaky.close();
    }
  });
});

describe('reciprocalRankFusion', () => {
  const hit = (id: string, rank: number) => ({ chunk: makeChunk({ id, orgId: ORG, documentId: 'd', text: id }), score: 1, rank });
  it('sums 1/(60 + rank) over lists, keeps first-seen order on ties, renumbers ranks', () => {
    const fused = reciprocalRankFusion(
      [
        [hit('a', 1), hit('b', 2)],
        [hit('b', 1), hit('c', 2)],
      ],
      10,
    );
    expect(fused.map((h) => h.chunk.id)).toEqual(['b', 'a', 'c']);
    expect(fused[0].score).toBeCloseTo(1 / 62 + 1 / 61, 12);
    expect(fused[1].score).toBeCloseTo(1 / 61, 12);
    expect(fused.map((h) => h.rank)).toEqual([1, 2, 3]);
    expect(
      reciprocalRankFusion(
        [
          [hit('a', 1), hit('b', 2)],
          [hit('b', 1), hit('a', 2)],
        ],
        1,
      ).map((h) => h.chunk.id),
    ).toEqual(['a']);
  });
});

describe('convexCombination (Bruch, Gai & Ingber 2023)', () => {
  const hit = (id: string, score: number) => ({ chunk: makeChunk({ id, orgId: ORG, documentId: 'd', text: id }), score, rank: 0 });
  const lexical = [hit('a', 10), hit('b', 5), hit('c', 2)];
  const dense = [hit('c', 0.8), hit('d', 0.6), hit('a', 0.2)];

  it('theoretical min-max: BM25 over [0, max], cosine over [-1, max], weighted by alpha; absent = 0', () => {
    const fused = convexCombination(lexical, dense, 10, 0.5, 'tmm');
    const expected: Record<string, number> = {
      a: 0.5 * (10 / 10) + 0.5 * ((0.2 + 1) / 1.8),
      b: 0.5 * (5 / 10),
      c: 0.5 * (2 / 10) + 0.5 * 1,
      d: 0.5 * ((0.6 + 1) / 1.8),
    };
    expect(fused.map((h) => h.chunk.id)).toEqual(['a', 'c', 'd', 'b']);
    for (const h of fused) expect(h.score).toBeCloseTo(expected[h.chunk.id], 12);
    expect(fused.map((h) => h.rank)).toEqual([1, 2, 3, 4]);
  });

  it("min-max uses each list's own lowest score; alpha 0 and 1 give one list's order", () => {
    const fused = convexCombination(lexical, dense, 10, 0.3, 'minmax');
    const expected: Record<string, number> = { a: 0.7 * 1 + 0.3 * 0, b: 0.7 * (3 / 8), c: 0.7 * 0 + 0.3 * 1, d: 0.3 * (0.4 / 0.6) };
    for (const h of fused) expect(h.score).toBeCloseTo(expected[h.chunk.id], 12);
    expect(convexCombination(lexical, dense, 2, 0, 'tmm').map((h) => h.chunk.id)).toEqual(['a', 'b']);
    expect(convexCombination(lexical, dense, 2, 1, 'tmm').map((h) => h.chunk.id)).toEqual(['c', 'd']);
    expect(() => convexCombination(lexical, dense, 2, 1.5)).toThrow(/alpha/);
  });

  it('an empty list contributes nothing; a list of equal scores normalises to 1', () => {
    expect(convexCombination([], dense, 10, 0.5, 'minmax').map((h) => h.chunk.id)).toEqual(['c', 'd', 'a']);
    const flat = convexCombination([hit('x', 3), hit('y', 3)], [], 10, 0.5, 'minmax');
    expect(flat.map((h) => h.score)).toEqual([0.5, 0.5]);
  });

  it('fuse() dispatches on the settings', () => {
    expect(fuse(lexical, dense, 10, { method: 'rrf', k: 60 })).toEqual(reciprocalRankFusion([lexical, dense], 10, 60));
    expect(fuse(lexical, dense, 10, { method: 'convex', alpha: 0.4, normalization: 'minmax' })).toEqual(convexCombination(lexical, dense, 10, 0.4, 'minmax'));
  });
});

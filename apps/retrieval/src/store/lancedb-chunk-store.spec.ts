import { randomUUID } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as lancedb from '@lancedb/lancedb';
import { ChunkStore, ChunkStoreError, ChunkStoreErrorCode, DenseChunkIndex, StoredChunk } from './chunk-store';
import { describeChunkStoreContract, makeChunk } from './chunk-store.contract';
import {
  CHUNKS_TABLE,
  FTS_COLUMN,
  FTS_TOKENIZER,
  LanceDbChunkStore,
  LanceDbChunkStoreOptions,
  sanitizeQuery,
  scopeFilter,
  sqlString,
  scopeSearchedExactly,
  VECTOR_EXACT_MAX_ROWS,
  VECTOR_INDEX_MIN_NPROBES,
  VECTOR_INDEX_MIN_ROWS,
  vectorIndexName,
  vectorIndexNprobes,
  VECTOR_INDEX_RETRAIN_GROWTH,
  VECTORS_TABLE,
} from './lancedb-chunk-store';

jest.setTimeout(30_000);

const dirs: string[] = [];
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'kb-chunk-store-'));
  dirs.push(dir);
  return dir;
}
afterAll(async () => {
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

async function openStore(options?: LanceDbChunkStoreOptions, dir?: string) {
  const at = dir ?? (await tempDir());
  const store = await LanceDbChunkStore.open(at, options);
  return { dir: at, store };
}

// The contract runs three times, so that both LanceDB search paths are proven: rows still
// outside the FTS index (flat scan), rows inside it, and the realistic mix a short background
// optimize delay produces.
function contractFactory(options: LanceDbChunkStoreOptions, optimizeAfterWrites = false) {
  return async () => {
    const { dir, store } = await openStore(options);
    const facade: ChunkStore & DenseChunkIndex = optimizeAfterWrites
      ? {
          replaceDocumentChunks: async (...args) => {
            await store.replaceDocumentChunks(...args);
            await store.optimize();
          },
          deleteDocuments: async (...args) => {
            const n = await store.deleteDocuments(...args);
            await store.optimize();
            return n;
          },
          countChunks: (...args) => store.countChunks(...args),
          search: (...args) => store.search(...args),
          getChunks: (...args) => store.getChunks(...args),
          listDocumentChunks: (...args) => store.listDocumentChunks(...args),
          close: () => store.close(),
          // DenseChunkIndex, passed through (vectors live in their own table).
          vectorSpace: () => store.vectorSpace(),
          resetVectorSpace: (...args) => store.resetVectorSpace(...args),
          upsertVectors: (...args) => store.upsertVectors(...args),
          searchDense: (...args) => store.searchDense(...args),
          documentChunks: (...args) => store.documentChunks(...args),
          listDocuments: () => store.listDocuments(),
        }
      : store;
    return {
      store: facade,
      cleanup: async () => {
        await store.close();
        await rm(dir, { recursive: true, force: true });
      },
    };
  };
}
describeChunkStoreContract('LanceDbChunkStore contract: unindexed rows (flat scan)', contractFactory({ optimizeDelayMs: false }));
describeChunkStoreContract('LanceDbChunkStore contract: indexed rows (optimize after each write)', contractFactory({ optimizeDelayMs: false }, true));
describeChunkStoreContract('LanceDbChunkStore contract: background optimize (20 ms)', contractFactory({ optimizeDelayMs: 20 }));

const ORG = 'org-1';
function chunks(documentId: string, texts: string[], extra: Partial<StoredChunk> = {}): StoredChunk[] {
  return texts.map((text, chunkIndex) => makeChunk({ orgId: ORG, documentId, text, chunkIndex, ...extra }));
}

describe('LanceDbChunkStore (adapter specifics)', () => {
  it('persists across close and reopen, index and all', async () => {
    const { dir, store } = await openStore();
    const d = randomUUID();
    const written = chunks(d, ['Scaffolds are inspected before first use and every seven days.'], {
      headingPath: ['Work at height'],
      projectId: randomUUID(),
    });
    await store.replaceDocumentChunks(ORG, d, written);
    await store.close();

    const reopened = await LanceDbChunkStore.open(dir);
    try {
      expect(await reopened.countChunks(ORG, d)).toBe(1);
      expect((await reopened.search('scaffold inspection', { orgId: ORG }, 5)).map((h) => h.chunk)).toEqual(written);
      const status = await reopened.indexStatus();
      expect(status.totalRows).toBe(1);
      // Rows written just before close are folded into the index after reopening.
      await reopened.optimize();
      expect(await reopened.indexStatus()).toEqual({ totalRows: 1, indexedRows: 1, unindexedRows: 0 });
    } finally {
      await reopened.close();
    }
  });

  it('writes its tables in Lance file format 2.1 (fast reads of a few rows), also after compaction', async () => {
    const { dir, store } = await openStore({ optimizeDelayMs: false });
    try {
      await store.resetVectorSpace({ model: 'test-model', dimensions: 4 });
      for (const text of ['Scaffolds are inspected weekly.', 'Harnesses are checked before use.']) {
        const d = randomUUID();
        const written = chunks(d, [text]);
        await store.replaceDocumentChunks(ORG, d, written);
        await store.upsertVectors(ORG, d, [{ chunkId: written[0].id, vector: [1, 0, 0, 0] }]);
      }
      await store.optimize();
      // A Lance file ends with major and minor version (u16 little-endian each), then the magic "LANC".
      const versions = new Set<string>();
      for (const table of [CHUNKS_TABLE, VECTORS_TABLE]) {
        const data = join(dir, `${table}.lance`, 'data');
        for (const name of await readdir(data)) {
          const bytes = await readFile(join(data, name));
          expect(bytes.subarray(-4).toString('latin1')).toBe('LANC');
          versions.add(`${table} ${bytes.readUInt16LE(bytes.length - 8)}.${bytes.readUInt16LE(bytes.length - 6)}`);
        }
      }
      expect([...versions].sort()).toEqual([`${CHUNKS_TABLE} 2.1`, `${VECTORS_TABLE} 2.1`].sort());
    } finally {
      await store.close();
    }
  });

  it('searches rows written after the last index build (flat scan), then folds them in on optimize', async () => {
    const { store } = await openStore({ optimizeDelayMs: false });
    try {
      const old = randomUUID();
      await store.replaceDocumentChunks(ORG, old, chunks(old, ['Ladders are checked before each use.']));
      await store.optimize();
      expect(await store.indexStatus()).toEqual({ totalRows: 1, indexedRows: 1, unindexedRows: 0 });

      const fresh = randomUUID();
      const added = chunks(fresh, ['Forklift operators hold a valid licence.', 'Ladders and forklifts are kept apart.']);
      await store.replaceDocumentChunks(ORG, fresh, added);
      // Re-chunk the indexed document: its old row must vanish from results even though the index still holds it.
      const rechunked = chunks(old, ['Step ladders are checked weekly by the site supervisor.']);
      await store.replaceDocumentChunks(ORG, old, rechunked);

      const before = await store.indexStatus();
      expect(before.totalRows).toBe(3);
      expect(before.unindexedRows).toBeGreaterThanOrEqual(2); // not in the index yet...
      const forklift = await store.search('forklift licence', { orgId: ORG }, 5);
      expect(forklift[0].chunk.id).toBe(added[0].id); // ...but searchable right away
      const ladders = await store.search('ladders', { orgId: ORG }, 5);
      expect(ladders.map((h) => h.chunk.id).sort()).toEqual([added[1].id, rechunked[0].id].sort());

      await store.optimize();
      expect(await store.indexStatus()).toEqual({ totalRows: 3, indexedRows: 3, unindexedRows: 0 });
      expect((await store.search('forklift licence', { orgId: ORG }, 5))[0].chunk.id).toBe(added[0].id);
      expect((await store.search('ladders', { orgId: ORG }, 5)).map((h) => h.chunk.id).sort()).toEqual([added[1].id, rechunked[0].id].sort());
    } finally {
      await store.close();
    }
  });

  it('returns the best topK, not the first matches, while the index covers no row yet', async () => {
    // Guards the 0.37.1 planner quirk handled in search(): flat-only plans apply the limit unsorted.
    const { store } = await openStore({ optimizeDelayMs: false });
    try {
      const weak = randomUUID();
      await store.replaceDocumentChunks(
        ORG,
        weak,
        chunks(
          weak,
          Array.from({ length: 5 }, (_, i) => `Minutes of meeting ${i}: budget, staffing, and a fire drill was mentioned once.`),
        ),
      );
      const strong = randomUUID();
      const best = chunks(strong, ['Fire drill procedure: every fire drill is logged; fire drills run quarterly.']);
      await store.replaceDocumentChunks(ORG, strong, best);
      expect((await store.indexStatus()).indexedRows).toBe(0);
      expect((await store.search('fire drill', { orgId: ORG }, 1)).map((h) => h.chunk.id)).toEqual([best[0].id]);
      const three = await store.search('fire drill', { orgId: ORG }, 3);
      expect(three).toHaveLength(3);
      expect(three.map((h) => h.rank)).toEqual([1, 2, 3]);

      // Same after every indexed row is deleted (the index again covers nothing).
      await store.optimize();
      await store.deleteDocuments(ORG, [weak, strong]);
      await store.replaceDocumentChunks(ORG, weak, chunks(weak, ['A fire drill was mentioned once in passing, among many other things.']));
      await store.replaceDocumentChunks(ORG, strong, best);
      expect((await store.indexStatus()).indexedRows).toBe(0);
      expect((await store.search('fire drill', { orgId: ORG }, 1)).map((h) => h.chunk.id)).toEqual([best[0].id]);
    } finally {
      await store.close();
    }
  });

  it('folds new rows into the index in the background shortly after a write burst', async () => {
    const { store } = await openStore({ optimizeDelayMs: 30 });
    try {
      for (let i = 0; i < 5; i++) {
        const d = randomUUID();
        await store.replaceDocumentChunks(ORG, d, chunks(d, [`Permit to work number ${i} for hot work.`]));
      }
      const deadline = Date.now() + 10_000;
      let status = await store.indexStatus();
      while (status.unindexedRows > 0 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 25));
        status = await store.indexStatus();
      }
      expect(status).toEqual({ totalRows: 5, indexedRows: 5, unindexedRows: 0 });
      expect(await store.search('hot work permit', { orgId: ORG }, 10)).toHaveLength(5);
    } finally {
      await store.close();
    }
  });

  it('replaces atomically: concurrent searches never see duplicates or an empty document', async () => {
    const { store } = await openStore({ optimizeDelayMs: 10 });
    try {
      const d = randomUUID();
      const texts = ['Confined space entry requires a gas test.', 'A standby person stays at the confined space entrance.'];
      await store.replaceDocumentChunks(ORG, d, chunks(d, texts));
      let writing = true;
      const writer = (async () => {
        for (let round = 0; round < 15; round++) await store.replaceDocumentChunks(ORG, d, chunks(d, texts));
        writing = false;
      })();
      const seen: number[] = [];
      while (writing) {
        const hits = await store.search('confined space', { orgId: ORG }, 10);
        seen.push(hits.length);
      }
      await writer;
      expect(seen.length).toBeGreaterThan(0);
      expect(new Set(seen)).toEqual(new Set([2]));
    } finally {
      await store.close();
    }
  });

  it('indexes the scope columns and the chunk id, also on a table created before the id index existed', async () => {
    const { dir, store } = await openStore({ optimizeDelayMs: false });
    await store.close();
    const db = await lancedb.connect(dir);
    const table = await db.openTable(CHUNKS_TABLE);
    const idIndex = (await table.listIndices()).find((ix) => ix.columns.length === 1 && ix.columns[0] === 'id');
    expect(idIndex?.indexType).toBe('BTree');
    await table.dropIndex(idIndex!.name);
    table.close();
    db.close();
    const reopened = await LanceDbChunkStore.open(dir, { optimizeDelayMs: false });
    await reopened.close();
    const again = await lancedb.connect(dir);
    try {
      const indexed = (await (await again.openTable(CHUNKS_TABLE)).listIndices()).map((ix) => `${ix.columns.join(',')}:${ix.indexType}`);
      expect(indexed).toEqual(expect.arrayContaining(['org_id:Bitmap', 'project_id:Bitmap', 'document_id:BTree', 'id:BTree']));
    } finally {
      again.close();
    }
  });

  it('opens a table written before word boxes existed: the column is added, its chunks read back with wordBoxes []', async () => {
    const { dir, store } = await openStore({ optimizeDelayMs: false });
    const orgId = randomUUID();
    const chunk = makeChunk({
      orgId,
      documentId: randomUUID(),
      text: 'Guard rails are inspected weekly.',
      wordBoxes: [{ start: 0, end: 5, page: 1, x0: 1, y0: 2, x1: 3, y1: 4 }],
    });
    await store.replaceDocumentChunks(orgId, chunk.documentId, [chunk]);
    await store.close();
    const db = await lancedb.connect(dir);
    const table = await db.openTable(CHUNKS_TABLE);
    await table.dropColumns(['word_boxes']);
    table.close();
    db.close();
    const reopened = await LanceDbChunkStore.open(dir, { optimizeDelayMs: false });
    try {
      expect(await reopened.getChunks(orgId, [chunk.id])).toEqual([{ ...chunk, wordBoxes: [] }]);
    } finally {
      await reopened.close();
    }
  });

  it('runs optimize beside the write queue: a write issued during an optimize commits before the optimize ends', async () => {
    const { store } = await openStore({ optimizeDelayMs: false });
    try {
      // Enough unindexed text that folding it into the FTS index takes far longer than one small write.
      const words = 'inspection permit hazard ladder scaffold harness valve boiler torch welding respirator guard'.split(' ');
      const body = (i: number) => Array.from({ length: 120 }, (_, k) => `${words[(i + k) % words.length]}${(i * 31 + k) % 997}`).join(' ');
      const bulk = Array.from({ length: 40 }, () => randomUUID());
      await Promise.all(
        bulk.map((d, n) =>
          store.replaceDocumentChunks(
            ORG,
            d,
            chunks(
              d,
              Array.from({ length: 100 }, (_, i) => body(n * 100 + i)),
            ),
          ),
        ),
      );
      let optimized = false;
      const optimizing = store.optimize().then(() => {
        optimized = true;
      });
      const d = randomUUID();
      await store.replaceDocumentChunks(ORG, d, chunks(d, ['Hot work needs a fire watch.']));
      expect(optimized).toBe(false);
      const hits = await store.search('fire watch', { orgId: ORG }, 5);
      expect(hits.map((h) => h.chunk.documentId)).toEqual([d]);
      await optimizing;
      expect(await store.indexStatus()).toMatchObject({ totalRows: 4001 });
    } finally {
      await store.close();
    }
  });

  it('keeps replace and delete exact when they race an optimize that compacts their fragments, and the optimize still completes', async () => {
    const warnings: string[] = [];
    const { store } = await openStore({ optimizeDelayMs: false, logger: { warn: (_o, msg) => warnings.push(msg) } });
    try {
      const docs = Array.from({ length: 120 }, () => randomUUID());
      // One commit (one small fragment) per document, so compaction rewrites the fragments the writes below touch.
      for (const [i, d] of docs.entries()) await store.replaceDocumentChunks(ORG, d, chunks(d, [`oldterm${i} lockout tagout`, `oldterm${i} energy isolation`]));
      const replaced = docs.slice(0, 40);
      const deleted = docs.slice(40, 80);
      const [, ...results] = await Promise.all([
        store.optimize(),
        ...replaced.map((d, i) => store.replaceDocumentChunks(ORG, d, chunks(d, [`newterm${i} lockout verified`]))),
        ...deleted.map((d) => store.deleteDocuments(ORG, [d])),
      ]);
      expect(results.slice(replaced.length)).toEqual(deleted.map(() => 2));
      await store.optimize();
      expect(await store.indexStatus()).toEqual({ totalRows: 40 + 80, indexedRows: 120, unindexedRows: 0 });
      for (const d of replaced) expect(await store.countChunks(ORG, d)).toBe(1);
      for (const d of deleted) expect(await store.countChunks(ORG, d)).toBe(0);
      for (const d of docs.slice(80)) expect(await store.countChunks(ORG, d)).toBe(2);
      expect(await store.search('oldterm0', { orgId: ORG }, 5)).toEqual([]);
      expect(await store.search('oldterm45', { orgId: ORG }, 5)).toEqual([]);
      expect((await store.search('newterm3', { orgId: ORG }, 5)).map((h) => h.chunk.documentId)).toEqual([replaced[3]]);
      expect((await store.search('oldterm100', { orgId: ORG }, 5)).map((h) => h.chunk.documentId)).toEqual([docs[100], docs[100]]);
      expect(warnings).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it('group-commits a burst of concurrent writes: one table version for many documents, same result as one by one', async () => {
    const grouped = await openStore({ optimizeDelayMs: false });
    const single = await openStore({ optimizeDelayMs: false, groupCommit: false });
    try {
      const docs = Array.from({ length: 40 }, () => randomUUID());
      const versionOf = async (dir: string) => {
        const db = await lancedb.connect(dir);
        try {
          return await (await db.openTable(CHUNKS_TABLE)).version();
        } finally {
          db.close();
        }
      };
      const before = await versionOf(grouped.dir);
      const burst = (store: LanceDbChunkStore) =>
        Promise.all([
          ...docs.map((d, i) =>
            store.replaceDocumentChunks(ORG, d, chunks(d, [`Permit ${i}: hot work near the boiler.`, `Permit ${i}: fire watch for one hour.`])),
          ),
          store.deleteDocuments(ORG, [docs[0], docs[1]]),
          store.replaceDocumentChunks(ORG, docs[1], chunks(docs[1], ['Permit renewed: hot work allowed.'])),
        ]);
      const [groupedResults, singleResults] = await Promise.all([burst(grouped.store), burst(single.store)]);
      // Every call of the burst was issued before the queue reached the group: one commit.
      expect((await versionOf(grouped.dir)) - before).toBe(1);
      expect(groupedResults).toEqual(singleResults);
      for (const d of docs) expect(await grouped.store.countChunks(ORG, d)).toBe(await single.store.countChunks(ORG, d));
      const titles = async (store: LanceDbChunkStore) => (await store.search('hot work permit', { orgId: ORG }, 100)).map((h) => h.chunk.text).sort();
      expect(await titles(grouped.store)).toEqual(await titles(single.store));
      expect(await titles(grouped.store)).toHaveLength(2 * 38 + 1);
    } finally {
      await grouped.store.close();
      await single.store.close();
    }
  });

  it('builds a vector index once the vectors table is large enough, and dense search still finds the nearest chunk in scope', async () => {
    const { dir, store } = await openStore({ optimizeDelayMs: false });
    try {
      await store.resetVectorSpace({ model: 'test-model', dimensions: 16 });
      // Deterministic pseudo-random unit vectors (mulberry32), so the test is reproducible. (An LCG
      // computed in floating point lost precision and repeated vectors.)
      let seed = 7;
      const rand = () => {
        seed = (seed + 0x6d2b79f5) | 0;
        let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
        t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
        return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32 - 0.5;
      };
      const unit = () => {
        const v = Array.from({ length: 16 }, rand);
        const n = Math.hypot(...v);
        return v.map((x) => x / n);
      };
      const docs = Array.from({ length: VECTOR_INDEX_MIN_ROWS / 100 }, () => randomUUID());
      const stored = new Map<string, number[]>();
      await Promise.all(
        docs.map(async (d, i) => {
          const cs = chunks(
            d,
            Array.from({ length: 100 }, (_, k) => `Record ${i}.${k}`),
            { projectId: i % 2 === 0 ? 'p-even' : 'p-odd' },
          );
          await store.replaceDocumentChunks(ORG, d, cs);
          const vs = cs.map((c) => ({ chunkId: c.id, vector: unit() }));
          for (const v of vs) stored.set(v.chunkId, v.vector);
          expect(await store.upsertVectors(ORG, d, vs)).toBe(100);
        }),
      );
      await store.optimize();
      const db = await lancedb.connect(dir);
      try {
        const indices = await (await db.openTable('chunk_vectors')).listIndices();
        expect(indices.filter((ix) => ix.columns.includes('vector')).map((ix) => [ix.name, ix.indexType])).toEqual([[vectorIndexName(100), 'IvfFlat']]);
      } finally {
        db.close();
      }
      // A stored vector is its own nearest neighbour (cosine 1), found through the index, and the
      // project scope is applied before ranking.
      const [targetId, target] = [...stored][4321];
      const hits = await store.searchDense(target, { orgId: ORG }, 5);
      expect(hits[0].chunk.id).toBe(targetId);
      expect(hits[0].score).toBeCloseTo(1, 5);
      const other = hits[0].chunk.projectId === 'p-even' ? 'p-odd' : 'p-even';
      const scoped = await store.searchDense(target, { orgId: ORG, projectId: other }, 5);
      expect(scoped).toHaveLength(5);
      expect(scoped.every((h) => h.chunk.projectId === other)).toBe(true);
      // Recall@10 of the indexed search against exact (brute-force) search, over 30 queries near
      // stored vectors: the probes cover enough of the partitions.
      const all = [...stored];
      let found = 0;
      for (let q = 0; q < 30; q++) {
        const base = all[(q * 331) % all.length][1];
        const noisy = base.map((x) => x + rand() * 0.3);
        const n = Math.hypot(...noisy);
        const query = noisy.map((x) => x / n);
        const exact = all
          .map(([id, v]) => ({ id, dot: v.reduce((acc, x, k) => acc + x * query[k], 0) }))
          .sort((a, b) => b.dot - a.dot)
          .slice(0, 10)
          .map((r) => r.id);
        const got = (await store.searchDense(query, { orgId: ORG }, 10)).map((h) => h.chunk.id);
        found += got.filter((id) => exact.includes(id)).length;
      }
      expect(found / 300).toBeGreaterThanOrEqual(0.9);

      // A small org sharing the table (20 of its 10,020 vectors, in the index after the optimize) is
      // searched exactly: the same top 5 as brute force over its own vectors. Through the index
      // (20 of 100 partitions probed) most of its vectors would not even be compared.
      const small = randomUUID();
      const smallChunks = chunks(
        small,
        Array.from({ length: 20 }, (_, k) => `Small org ${k}`),
        { orgId: 'org-small' },
      );
      await store.replaceDocumentChunks('org-small', small, smallChunks);
      const smallVectors = smallChunks.map((c) => ({ chunkId: c.id, vector: unit() }));
      await store.upsertVectors('org-small', small, smallVectors);
      await store.optimize();
      for (let q = 0; q < 10; q++) {
        const query = unit();
        const exact = smallVectors
          .map((v) => ({ id: v.chunkId, dot: v.vector.reduce((acc, x, k) => acc + x * query[k], 0) }))
          .sort((a, b) => b.dot - a.dot)
          .slice(0, 5)
          .map((r) => r.id);
        expect((await store.searchDense(query, { orgId: 'org-small' }, 5)).map((h) => h.chunk.id)).toEqual(exact);
      }

      // Grown to VECTOR_INDEX_RETRAIN_GROWTH times the rows it was trained on, the index is trained
      // again with √rows partitions, replacing the old one; searches still find stored vectors.
      const more = Array.from({ length: (VECTOR_INDEX_RETRAIN_GROWTH - 1) * (VECTOR_INDEX_MIN_ROWS / 100) }, () => randomUUID());
      for (const [i, d] of more.entries()) {
        const cs = chunks(
          d,
          Array.from({ length: 100 }, (_, k) => `Later ${i}.${k}`),
        );
        await store.replaceDocumentChunks(ORG, d, cs);
        const vs = cs.map((c) => ({ chunkId: c.id, vector: unit() }));
        for (const v of vs) stored.set(v.chunkId, v.vector);
        await store.upsertVectors(ORG, d, vs);
      }
      await store.optimize();
      const db2 = await lancedb.connect(dir);
      try {
        const indices = await (await db2.openTable('chunk_vectors')).listIndices();
        expect(indices.filter((ix) => ix.columns.includes('vector')).map((ix) => ix.name)).toEqual([vectorIndexName(141)]);
      } finally {
        db2.close();
      }
      const [laterId, later] = [...stored][stored.size - 17];
      expect((await store.searchDense(later, { orgId: ORG }, 1))[0].chunk.id).toBe(laterId);
    } finally {
      await store.close();
    }
  });

  it('searches a small scope exactly: at most VECTOR_EXACT_MAX_ROWS vectors, and no more than the IVF probes would compare', () => {
    expect(scopeSearchedExactly(5_000, 5_000, 0, 20)).toBe(true); // no index: always exact
    // 100 orgs of 10k vectors in 1M rows, 200 of 1,000 partitions probed (~200k vectors compared).
    expect(scopeSearchedExactly(10_000, 1_000_000, 1_000, 200)).toBe(true);
    // An org too large for an exact search, though a fifth of the table: the index.
    expect(scopeSearchedExactly(VECTOR_EXACT_MAX_ROWS + 1, 1_000_000, 1_000, 200)).toBe(false);
    // One org holding the whole table: the index.
    expect(scopeSearchedExactly(10_000, 10_000, 100, 20)).toBe(false);
    expect(scopeSearchedExactly(20, 10_020, 100, 20)).toBe(true);
  });

  it("probes a fifth of the IVF partitions, never fewer than LanceDB's default 20", () => {
    expect(vectorIndexNprobes(0)).toBe(VECTOR_INDEX_MIN_NPROBES);
    expect(vectorIndexNprobes(100)).toBe(20); // trained on 10k rows
    expect(vectorIndexNprobes(316)).toBe(64); // trained on 100k rows: recall@10 0.847 at 20 probes, 0.948 at 60
    expect(vectorIndexNprobes(1_000)).toBe(200);
  });

  it('rebuilds an FTS index whose tokenizer differs from FTS_TOKENIZER', async () => {
    const dir = await tempDir();
    const first = await LanceDbChunkStore.open(dir);
    const d = randomUUID();
    const written = chunks(d, ['Extinguishers are inspected monthly.']);
    await first.replaceDocumentChunks(ORG, d, written);
    await first.close();
    // Simulate an index built by an older version with other options (no stemming).
    const db = await lancedb.connect(dir);
    const table = await db.openTable(CHUNKS_TABLE);
    await table.createIndex(FTS_COLUMN, { config: lancedb.Index.fts({ stem: false }), replace: true });
    table.close();
    db.close();

    const reopened = await LanceDbChunkStore.open(dir);
    try {
      expect(await reopened.indexStatus()).toEqual({ totalRows: 1, indexedRows: 1, unindexedRows: 0 });
      // Stemming is back: "extinguisher" finds "Extinguishers".
      expect((await reopened.search('extinguisher inspection', { orgId: ORG }, 5)).map((h) => h.chunk)).toEqual(written);
    } finally {
      await reopened.close();
    }
    const check = await lancedb.connect(dir);
    const [index] = (await (await check.openTable(CHUNKS_TABLE)).listIndices()).filter((i) => i.indexType === 'FTS');
    expect(index.indexDetails).toMatchObject({ stem: FTS_TOKENIZER.stem, lower_case: true, remove_stop_words: true });
    check.close();
  });

  it('migrates a table of the previous layout (BM25 on text only) and makes headings searchable', async () => {
    const dir = await tempDir();
    const db = await lancedb.connect(dir);
    const d = randomUUID();
    const old = {
      id: randomUUID(),
      org_id: ORG,
      project_id: 'p',
      document_id: d,
      file_name: 'a.pdf',
      chunk_index: 0,
      text: 'Inspect them monthly.',
      heading_path: JSON.stringify(['Extinguishers']),
      start_page: 1,
      end_page: 1,
      page_spans: JSON.stringify([{ page: 1, offset: 0 }]),
    };
    const table = await db.createTable(CHUNKS_TABLE, [old]);
    await table.createIndex('text', { config: lancedb.Index.fts(FTS_TOKENIZER) });
    table.close();
    db.close();

    const store = await LanceDbChunkStore.open(dir);
    try {
      const hits = await store.search('extinguisher', { orgId: ORG }, 5);
      expect(hits.map((h) => h.chunk.id)).toEqual([old.id]);
      expect(hits[0].chunk.text).toBe('Inspect them monthly.');
    } finally {
      await store.close();
    }
    const check = await lancedb.connect(dir);
    const fts = (await (await check.openTable(CHUNKS_TABLE)).listIndices()).filter((i) => i.indexType === 'FTS');
    expect(fts.map((i) => i.columns)).toEqual([[FTS_COLUMN]]);
    check.close();
  });

  it('refuses a directory holding a table of another layout', async () => {
    const dir = await tempDir();
    const db = await lancedb.connect(dir);
    await db.createTable(CHUNKS_TABLE, [{ id: 'x', body: 'not a chunk' }]);
    db.close();
    const err = await LanceDbChunkStore.open(dir).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ChunkStoreError);
    expect((err as ChunkStoreError).code).toBe(ChunkStoreErrorCode.Internal);
  });

  it('refuses a second open of the same directory until the first store is closed', async () => {
    const { dir, store } = await openStore();
    await expect(LanceDbChunkStore.open(`${dir}/.`)).rejects.toMatchObject({ code: ChunkStoreErrorCode.Unavailable });
    await store.close();
    const again = await LanceDbChunkStore.open(dir);
    await again.close();
  });

  it('rejects invalid options and out-of-range chunk fields', async () => {
    const dir = await tempDir();
    await expect(LanceDbChunkStore.open(dir, { optimizeDelayMs: -1 })).rejects.toMatchObject({
      code: ChunkStoreErrorCode.Validation,
    });
    await expect(LanceDbChunkStore.open('')).rejects.toMatchObject({ code: ChunkStoreErrorCode.Validation });
    const { store } = await openStore();
    try {
      const d = randomUUID();
      for (const bad of [{ chunkIndex: 2 ** 31 }, { startPage: 1.5 }, { pageSpans: [{ page: 1, offset: -0.5 }] }, { headingPath: [1] }]) {
        const chunk = { ...makeChunk({ orgId: ORG, documentId: d, text: 'x' }), ...bad } as unknown as StoredChunk;
        await expect(store.replaceDocumentChunks(ORG, d, [chunk])).rejects.toMatchObject({
          code: ChunkStoreErrorCode.Validation,
        });
      }
      expect(await store.countChunks(ORG, d)).toBe(0);
    } finally {
      await store.close();
    }
  });
});

describe('sqlString', () => {
  it('quotes and doubles single quotes, leaving backslashes literal', () => {
    expect(sqlString('plain')).toBe("'plain'");
    expect(sqlString("o'brien")).toBe("'o''brien'");
    expect(sqlString("a\\' OR 1=1 --")).toBe("'a\\'' OR 1=1 --'");
  });

  it('rejects NUL and unpaired surrogates', () => {
    expect(() => sqlString('a\u0000b')).toThrow(ChunkStoreError);
    expect(() => sqlString('a\uD800b')).toThrow(ChunkStoreError);
    expect(sqlString('🔥')).toBe("'🔥'");
  });
});

describe('scopeFilter', () => {
  it('builds org, project and document predicates', () => {
    expect(scopeFilter({ orgId: 'o' })).toBe("org_id = 'o'");
    expect(scopeFilter({ orgId: 'o', projectId: null, documentIds: [] })).toBe("org_id = 'o'");
    expect(scopeFilter({ orgId: 'o', projectId: 'p', documentIds: ['d1', "d'2", 'd1'] })).toBe(
      "org_id = 'o' AND (project_id = 'p' OR project_id IS NULL) AND document_id IN ('d1', 'd''2')",
    );
  });
});

describe('sanitizeQuery', () => {
  it('keeps letters and digits of any script and drops query syntax', () => {
    expect(sanitizeQuery('"fire doors" AND (exits OR x*) title:foo \\ ~2 ^3')).toBe('fire doors AND exits OR x title foo 2 3');
    expect(sanitizeQuery('ISO/IEC 27001:2022 — Größe naïve ﬁre 消防')).toBe('ISO IEC 27001 2022 Größe naïve fire 消防');
    expect(sanitizeQuery(' ?!"() ')).toBe('');
  });
});

/// <reference types="jest" />
// The contract every ChunkStore adapter must pass. An adapter's spec calls
// describeChunkStoreContract() with a factory; the LanceDB spec runs it always, the Qdrant spec
// runs it when QDRANT_URL is set. Only the port is used here: no adapter internals, no mocks.
import { randomUUID } from 'node:crypto';
import { ChunkStore, ChunkStoreError, ChunkStoreErrorCode, hasDenseIndex, SAFETY_CORPUS_ORG, SearchHit, SearchScope, StoredChunk } from './chunk-store';
import type { FusionSettings } from '../search/fusion';

/** A store that fuses lexical and dense lists itself (Qdrant's Query API). */
export interface ServerSideFusionStore {
  searchHybrid(query: string, vector: number[], scope: SearchScope, topK: number, candidates: number, fusion?: FusionSettings): Promise<SearchHit[]>;
}

/** What an adapter declares beyond the port, so the contract tests it too. */
export interface ChunkStoreContractOptions {
  /** The adapter implements {@link ServerSideFusionStore} (every fusion method is then tested). */
  serverSideFusion?: boolean;
}

/** A fresh, empty store and how to dispose of it (close + delete its data). */
export type ChunkStoreFactory = () => Promise<{ store: ChunkStore; cleanup: () => Promise<void> }>;

/** Builds a chunk with realistic defaults; `text` and ids are what tests usually vary. */
export function makeChunk(overrides: Partial<StoredChunk> & Pick<StoredChunk, 'orgId' | 'documentId' | 'text'>): StoredChunk {
  return {
    id: randomUUID(),
    projectId: null,
    fileName: 'handbook.pdf',
    chunkIndex: 0,
    headingPath: [],
    startPage: 1,
    endPage: 1,
    pageSpans: [{ page: 1, offset: 0 }],
    wordBoxes: [],
    ...overrides,
  };
}

/** Chunks for one document, numbered in order. */
function docChunks(orgId: string, documentId: string, texts: string[], extra: Partial<StoredChunk> = {}): StoredChunk[] {
  return texts.map((text, chunkIndex) => makeChunk({ orgId, documentId, text, chunkIndex, ...extra }));
}

const FIRE = [
  'Portable fire extinguishers shall be inspected monthly and serviced annually by a competent person.',
  'Fire doors must be kept closed and never wedged open; self-closing devices are checked every six months.',
];
const EXITS = [
  'Emergency exits and escape routes must remain unobstructed at all times and be clearly signposted.',
  'Emergency lighting is tested monthly by a short functional test and annually for its full rated duration.',
];
const PPE = [
  'Hearing protection is mandatory in areas where the daily noise exposure exceeds 85 dB(A).',
  'Safety helmets conforming to EN 397 shall be worn on all construction sites.',
];
const CHEMICALS = [
  'Flammable liquids are stored in approved cabinets away from ignition sources, with secondary containment.',
  'Safety data sheets for every hazardous substance must be available to workers in their language.',
];

async function expectStoreError(promise: Promise<unknown>, code: ChunkStoreErrorCode): Promise<void> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ChunkStoreError);
  expect((err as ChunkStoreError).code).toBe(code);
}

function ids(hits: SearchHit[]): string[] {
  return hits.map((h) => h.chunk.id);
}

function docIds(hits: SearchHit[]): Set<string> {
  return new Set(hits.map((h) => h.chunk.documentId));
}

/**
 * Registers the ChunkStore contract suite as one Jest `describe(name)` block. `factory` is called
 * before every test for an empty store; its `cleanup` runs after the test.
 */
export function describeChunkStoreContract(name: string, factory: ChunkStoreFactory, options: ChunkStoreContractOptions = {}): void {
  describe(name, () => {
    let store: ChunkStore;
    let cleanup: () => Promise<void>;
    const orgA = `org-a-${randomUUID()}`;
    const orgB = `org-b-${randomUUID()}`;

    beforeEach(async () => {
      ({ store, cleanup } = await factory());
    });
    afterEach(async () => {
      await cleanup();
    });

    describe('replaceDocumentChunks', () => {
      it('makes chunks searchable as soon as it returns and round-trips every field exactly', async () => {
        const chunk = makeChunk({
          orgId: orgA,
          documentId: randomUUID(),
          projectId: randomUUID(),
          fileName: 'Brandschutz «Ordnung» v2.pdf',
          chunkIndex: 7,
          text: 'Portable fire extinguishers shall be inspected monthly.\nSee "Annex B: Records".',
          headingPath: ['Part II — Fire safety', 'Section 4 "Extinguishers"', 'Über \\ Prüfung', ''],
          startPage: 12,
          endPage: 13,
          pageSpans: [
            { page: 12, offset: 0 },
            { page: 13, offset: 57 },
          ],
          wordBoxes: [
            { start: 0, end: 8, page: 12, x0: 72.02, y0: 700.5, x1: 118.4, y1: 712.75 },
            { start: 57, end: 60, page: 13, x0: 72, y0: 80.1, x1: 90.33, y1: 92 },
          ],
        });
        const noPages = makeChunk({
          orgId: orgA,
          documentId: chunk.documentId,
          projectId: chunk.projectId,
          chunkIndex: 8,
          text: 'Extinguisher inspection records are kept for five years.',
          headingPath: [],
          startPage: null,
          endPage: null,
          pageSpans: [],
        });
        await store.replaceDocumentChunks(orgA, chunk.documentId, [chunk, noPages]);

        const hits = await store.search('extinguisher inspection', { orgId: orgA }, 10);
        expect(hits.map((h) => h.chunk).sort((a, b) => a.chunkIndex - b.chunkIndex)).toEqual([chunk, noPages]);
        expect(await store.getChunks(orgA, [noPages.id, chunk.id])).toEqual([noPages, chunk]);
      });

      it('is idempotent: the same call twice leaves one copy of each chunk', async () => {
        const documentId = randomUUID();
        const chunks = docChunks(orgA, documentId, FIRE);
        await store.replaceDocumentChunks(orgA, documentId, chunks);
        await store.replaceDocumentChunks(orgA, documentId, chunks);

        expect(await store.countChunks(orgA, documentId)).toBe(2);
        const hits = await store.search('fire', { orgId: orgA }, 10);
        expect(ids(hits).sort()).toEqual(chunks.map((c) => c.id).sort());
      });

      it('replaces the previous chunks of the document (re-chunking with new ids)', async () => {
        const documentId = randomUUID();
        const old = docChunks(orgA, documentId, [...FIRE, ...EXITS]);
        await store.replaceDocumentChunks(orgA, documentId, old);
        const fresh = docChunks(orgA, documentId, ['Fire wardens are appointed for every floor and trained yearly.']);
        await store.replaceDocumentChunks(orgA, documentId, fresh);

        expect(await store.countChunks(orgA, documentId)).toBe(1);
        expect(
          await store.getChunks(
            orgA,
            old.map((c) => c.id),
          ),
        ).toEqual([]);
        expect(await store.search('emergency exits escape routes', { orgId: orgA }, 10)).toEqual([]);
        expect(ids(await store.search('fire', { orgId: orgA }, 10))).toEqual([fresh[0].id]);
      });

      it('with an empty list removes the document, leaving other documents alone', async () => {
        const doc1 = randomUUID();
        const doc2 = randomUUID();
        await store.replaceDocumentChunks(orgA, doc1, docChunks(orgA, doc1, FIRE));
        await store.replaceDocumentChunks(orgA, doc2, docChunks(orgA, doc2, EXITS));
        await store.replaceDocumentChunks(orgA, doc1, []);

        expect(await store.countChunks(orgA, doc1)).toBe(0);
        expect(await store.countChunks(orgA, doc2)).toBe(2);
        expect(await store.search('fire extinguishers', { orgId: orgA }, 10)).toEqual([]);
      });

      it('never touches the same document id in another org', async () => {
        const documentId = randomUUID();
        const inB = docChunks(orgB, documentId, EXITS);
        await store.replaceDocumentChunks(orgB, documentId, inB);
        await store.replaceDocumentChunks(orgA, documentId, docChunks(orgA, documentId, FIRE));
        await store.replaceDocumentChunks(orgA, documentId, []);

        expect(await store.countChunks(orgB, documentId)).toBe(2);
        expect(
          await store.getChunks(
            orgB,
            inB.map((c) => c.id),
          ),
        ).toEqual(inB);
      });

      it('rejects chunks of another org or document and duplicate ids, changing nothing', async () => {
        const documentId = randomUUID();
        const good = docChunks(orgA, documentId, FIRE);
        await store.replaceDocumentChunks(orgA, documentId, good);

        const otherOrg = makeChunk({ orgId: orgB, documentId, text: 'Fire drills twice a year.' });
        await expectStoreError(store.replaceDocumentChunks(orgA, documentId, [otherOrg]), ChunkStoreErrorCode.Validation);
        const otherDoc = makeChunk({ orgId: orgA, documentId: randomUUID(), text: 'Fire drills twice a year.' });
        await expectStoreError(store.replaceDocumentChunks(orgA, documentId, [otherDoc]), ChunkStoreErrorCode.Validation);
        const dup = makeChunk({ orgId: orgA, documentId, text: 'Fire drills twice a year.' });
        await expectStoreError(store.replaceDocumentChunks(orgA, documentId, [dup, { ...dup, chunkIndex: 1 }]), ChunkStoreErrorCode.Validation);
        await expectStoreError(store.replaceDocumentChunks('', documentId, []), ChunkStoreErrorCode.Validation);

        expect(
          await store.getChunks(
            orgA,
            good.map((c) => c.id),
          ),
        ).toEqual(good);
        expect(await store.countChunks(orgB, documentId)).toBe(0);
      });

      it('serializes concurrent writes: parallel replaces and deletes end in a consistent state', async () => {
        const docs = Array.from({ length: 8 }, () => randomUUID());
        const versions = docs.map((d, i) =>
          Array.from({ length: 3 }, (_, v) =>
            docChunks(
              orgA,
              d,
              Array.from({ length: 1 + v }, (_, k) => `Inspection record ${i}.${v}.${k}: extinguisher checked.`),
            ),
          ),
        );
        await Promise.all(
          versions.flatMap((vs, i) => [
            ...vs.map((chunks) => store.replaceDocumentChunks(orgA, docs[i], chunks)),
            ...(i % 4 === 0 ? [store.deleteDocuments(orgA, [docs[i]])] : []),
          ]),
        );
        // Calls are applied in call order: the last replace wins, and a delete issued after the
        // replaces of its document removes it.
        for (const [i, d] of docs.entries()) {
          expect(await store.countChunks(orgA, d)).toBe(i % 4 === 0 ? 0 : 3);
        }
        const hits = await store.search('extinguisher inspection record', { orgId: orgA }, 100);
        expect(new Set(ids(hits)).size).toBe(hits.length);
        expect(hits).toHaveLength(6 * 3);
      });

      it('applies interleaved replaces and deletes of one document in call order, with exact delete counts', async () => {
        const [d, other] = [randomUUID(), randomUUID()];
        await store.replaceDocumentChunks(orgA, other, docChunks(orgA, other, PPE));
        const v1 = docChunks(orgA, d, FIRE);
        const v2 = docChunks(orgA, d, [...EXITS, CHEMICALS[0]]);
        const v3 = docChunks(orgA, d, [CHEMICALS[1]]);
        // Issued without awaiting: adapters that group concurrent writes must still apply them in order.
        const calls = [
          store.replaceDocumentChunks(orgA, d, v1),
          store.deleteDocuments(orgA, [d]),
          store.deleteDocuments(orgA, [d]),
          store.replaceDocumentChunks(orgA, d, v2),
          store.deleteDocuments(orgA, [d, other]),
          store.replaceDocumentChunks(orgA, d, v3),
          store.replaceDocumentChunks(orgB, d, docChunks(orgB, d, FIRE)),
          store.deleteDocuments(orgB, [d]),
        ];
        const results = await Promise.all(calls);
        expect(results[1]).toBe(2); // v1's two chunks
        expect(results[2]).toBe(0); // already gone
        expect(results[4]).toBe(3 + 2); // v2's three chunks + the other document's two
        expect(results[7]).toBe(2); // org B's copy only
        expect(await store.countChunks(orgA, d)).toBe(1);
        expect(await store.countChunks(orgA, other)).toBe(0);
        expect(await store.countChunks(orgB, d)).toBe(0);
        expect(ids(await store.search('safety data sheets hazardous substance', { orgId: orgA }, 10))).toEqual([v3[0].id]);
        expect(await store.search('extinguishers emergency exits hearing', { orgId: orgA }, 10)).toEqual([]);
      });

      it('keeps a rejected call from affecting the calls issued around it', async () => {
        const [d1, d2] = [randomUUID(), randomUUID()];
        const bad = docChunks(orgA, d2, EXITS);
        bad[1] = { ...bad[1], documentId: d1 };
        const results = await Promise.allSettled([
          store.replaceDocumentChunks(orgA, d1, docChunks(orgA, d1, FIRE)),
          store.replaceDocumentChunks(orgA, d2, bad),
          store.replaceDocumentChunks(orgA, d2, docChunks(orgA, d2, [PPE[0]])),
        ]);
        expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
        expect(await store.countChunks(orgA, d1)).toBe(2);
        expect(await store.countChunks(orgA, d2)).toBe(1);
      });
    });

    describe('deleteDocuments and countChunks', () => {
      it('deletes only the listed documents of the org and returns the number of chunks deleted', async () => {
        const [d1, d2, d3] = [randomUUID(), randomUUID(), randomUUID()];
        await store.replaceDocumentChunks(orgA, d1, docChunks(orgA, d1, FIRE));
        await store.replaceDocumentChunks(orgA, d2, docChunks(orgA, d2, [EXITS[0]]));
        await store.replaceDocumentChunks(orgA, d3, docChunks(orgA, d3, PPE));
        await store.replaceDocumentChunks(orgB, d1, docChunks(orgB, d1, CHEMICALS));

        expect(await store.deleteDocuments(orgA, [d1, d2, randomUUID()])).toBe(3);
        expect(await store.countChunks(orgA, d1)).toBe(0);
        expect(await store.countChunks(orgA, d2)).toBe(0);
        expect(await store.countChunks(orgA, d3)).toBe(2);
        expect(await store.countChunks(orgB, d1)).toBe(2);
        expect(await store.search('fire', { orgId: orgA }, 10)).toEqual([]);
      });

      it('returns 0 for unknown documents, an empty list and a second delete', async () => {
        const d1 = randomUUID();
        await store.replaceDocumentChunks(orgA, d1, docChunks(orgA, d1, FIRE));
        expect(await store.deleteDocuments(orgA, [])).toBe(0);
        expect(await store.deleteDocuments(orgA, [randomUUID()])).toBe(0);
        expect(await store.deleteDocuments(orgB, [d1])).toBe(0);
        expect(await store.deleteDocuments(orgA, [d1, d1])).toBe(2);
        expect(await store.deleteDocuments(orgA, [d1])).toBe(0);
        expect(await store.countChunks(orgA, randomUUID())).toBe(0);
      });
    });

    describe('search', () => {
      it('ranks by BM25: best first, ranks 1..n, positive scores, at most topK', async () => {
        const d = randomUUID();
        const chunks = docChunks(orgA, d, [...FIRE, ...EXITS, ...PPE, ...CHEMICALS]);
        await store.replaceDocumentChunks(orgA, d, chunks);

        const hits = await store.search('how often are fire extinguishers inspected?', { orgId: orgA }, 3);
        expect(hits.length).toBeGreaterThan(0);
        expect(hits.length).toBeLessThanOrEqual(3);
        expect(hits[0].chunk.id).toBe(chunks[0].id);
        expect(hits.map((h) => h.rank)).toEqual(hits.map((_, i) => i + 1));
        for (const [i, h] of hits.entries()) {
          expect(h.score).toBeGreaterThan(0);
          if (i > 0) expect(h.score).toBeLessThanOrEqual(hits[i - 1].score);
        }
        expect(await store.search('monthly', { orgId: orgA }, 1)).toHaveLength(1);
      });

      it('finds a chunk by the words of its heading path (section titles are searchable)', async () => {
        const d = randomUUID();
        const chunks = [
          makeChunk({ orgId: orgA, documentId: d, text: 'Inspect them monthly and record the result.', headingPath: ['Part II', 'Portable extinguishers'] }),
          makeChunk({ orgId: orgA, documentId: d, chunkIndex: 1, text: 'Keep the doors closed.', headingPath: ['Part II', 'Fire doors'] }),
        ];
        await store.replaceDocumentChunks(orgA, d, chunks);
        expect(ids(await store.search('extinguisher', { orgId: orgA }, 5))).toEqual([chunks[0].id]);
        expect((await store.getChunks(orgA, [chunks[0].id]))[0].text).toBe('Inspect them monthly and record the result.');
      });

      it('matches across case, inflection and accents', async () => {
        const d = randomUUID();
        const chunks = docChunks(orgA, d, [...FIRE, 'The café kitchen uses a naïve extinguishing blanket.']);
        await store.replaceDocumentChunks(orgA, d, chunks);

        expect(ids(await store.search('EXTINGUISHER INSPECTION', { orgId: orgA }, 1))).toEqual([chunks[0].id]);
        expect(ids(await store.search('cafe naive', { orgId: orgA }, 1))).toEqual([chunks[2].id]);
      });

      it("never returns another org's chunks, even when they match better, and fills topK from the org", async () => {
        const dA = randomUUID();
        const dB = randomUUID();
        // Org B: many chunks that match the query far better than org A's one chunk.
        await store.replaceDocumentChunks(
          orgB,
          dB,
          docChunks(
            orgB,
            dB,
            Array.from({ length: 30 }, (_, i) => `Fire extinguisher fire extinguisher inspection log ${i}.`),
          ),
        );
        const mine = docChunks(orgA, dA, ['The annual report covers budgets, staffing and one note that a fire extinguisher was replaced.']);
        await store.replaceDocumentChunks(orgA, dA, mine);

        expect(ids(await store.search('fire extinguisher inspection', { orgId: orgA }, 1))).toEqual([mine[0].id]);
        const many = await store.search('fire extinguisher inspection', { orgId: orgA }, 50);
        expect(ids(many)).toEqual([mine[0].id]);
        const inB = await store.search('fire extinguisher inspection', { orgId: orgB }, 50);
        expect(inB).toHaveLength(30);
        expect(inB.every((h) => h.chunk.orgId === orgB)).toBe(true);
      });

      it('project scope returns that project plus org-level chunks, never another project', async () => {
        const p1 = randomUUID();
        const p2 = randomUUID();
        const [orgLevel, inP1, inP2, otherOrgP1] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
        await store.replaceDocumentChunks(orgA, orgLevel, docChunks(orgA, orgLevel, [FIRE[0]], { projectId: null }));
        await store.replaceDocumentChunks(orgA, inP1, docChunks(orgA, inP1, [FIRE[1]], { projectId: p1 }));
        // The other project's chunk matches best: it must still never appear.
        await store.replaceDocumentChunks(orgA, inP2, docChunks(orgA, inP2, ['Fire fire fire: extinguishers, fire doors and fire alarms.'], { projectId: p2 }));
        await store.replaceDocumentChunks(orgB, otherOrgP1, docChunks(orgB, otherOrgP1, [FIRE[0]], { projectId: p1 }));

        const scoped = await store.search('fire', { orgId: orgA, projectId: p1 }, 1);
        expect(scoped).toHaveLength(1);
        expect([orgLevel, inP1]).toContain(scoped[0].chunk.documentId);
        expect(docIds(await store.search('fire', { orgId: orgA, projectId: p1 }, 10))).toEqual(new Set([orgLevel, inP1]));
        expect(docIds(await store.search('fire', { orgId: orgA, projectId: p2 }, 10))).toEqual(new Set([orgLevel, inP2]));
        expect(docIds(await store.search('fire', { orgId: orgA, projectId: randomUUID() }, 10))).toEqual(new Set([orgLevel]));
        // No project scope: the whole org.
        expect(docIds(await store.search('fire', { orgId: orgA }, 10))).toEqual(new Set([orgLevel, inP1, inP2]));
        expect(docIds(await store.search('fire', { orgId: orgA, projectId: null }, 10))).toEqual(new Set([orgLevel, inP1, inP2]));
      });

      it('documentIds restricts the search, intersected with the project scope', async () => {
        const p1 = randomUUID();
        const [d1, d2, d3] = [randomUUID(), randomUUID(), randomUUID()];
        await store.replaceDocumentChunks(orgA, d1, docChunks(orgA, d1, FIRE, { projectId: p1 }));
        await store.replaceDocumentChunks(orgA, d2, docChunks(orgA, d2, ['Fire alarm call points are tested weekly.']));
        await store.replaceDocumentChunks(orgA, d3, docChunks(orgA, d3, ['Fire fire fire.'], { projectId: randomUUID() }));

        expect(docIds(await store.search('fire', { orgId: orgA, documentIds: [d2] }, 10))).toEqual(new Set([d2]));
        expect(docIds(await store.search('fire', { orgId: orgA, documentIds: [d1, d2] }, 10))).toEqual(new Set([d1, d2]));
        expect(await store.search('fire', { orgId: orgA, projectId: p1, documentIds: [d3] }, 10)).toEqual([]);
        expect(docIds(await store.search('fire', { orgId: orgA, projectId: p1, documentIds: [d3, d2] }, 10))).toEqual(new Set([d2]));
        expect(docIds(await store.search('fire', { orgId: orgA, documentIds: [] }, 10))).toEqual(new Set([d1, d2, d3]));
        // A document id of this org searched from another org: nothing.
        expect(await store.search('fire', { orgId: orgB, documentIds: [d1] }, 10)).toEqual([]);
        // excludeDocumentIds (superseded / not yet ready versions) is applied before ranking.
        expect(docIds(await store.search('fire', { orgId: orgA, excludeDocumentIds: [d1] }, 10))).toEqual(new Set([d2, d3]));
        expect(docIds(await store.search('fire', { orgId: orgA, documentIds: [d1, d2], excludeDocumentIds: [d2] }, 10))).toEqual(new Set([d1]));
        expect(docIds(await store.search('fire', { orgId: orgA, excludeDocumentIds: [] }, 10))).toEqual(new Set([d1, d2, d3]));
        expect(docIds(await store.search('fire', { orgId: orgA, excludeDocumentIds: [d1, d2, d3] }, 10))).toEqual(new Set());
      });

      it('returns [] for empty, stop-word-only and punctuation-only queries', async () => {
        const d = randomUUID();
        await store.replaceDocumentChunks(orgA, d, docChunks(orgA, d, [...FIRE, 'The and of to in: a list of stop words.']));
        for (const q of ['', '   ', '\n\t', 'the and of', 'The AND Of', '?!', '"" () :: \\\\ ** --', '...', '*']) {
          await expect(store.search(q, { orgId: orgA }, 5)).resolves.toEqual([]);
        }
      });

      it('treats query syntax characters as plain text and never throws on them', async () => {
        const d = randomUUID();
        const chunks = docChunks(orgA, d, [...FIRE, ...EXITS]);
        await store.replaceDocumentChunks(orgA, d, chunks);
        const nasty = [
          '"fire doors"',
          '"unbalanced quote fire',
          "fire' OR '1'='1",
          'text:fire',
          'fire AND (doors OR exits)',
          'NOT fire',
          'fire -doors +exits',
          'fire~2 doors^3',
          'fire* ext?nguisher',
          'C:\\fire\\doors',
          '[fire TO doors] {x}',
          'fire && doors || !exits',
          '/fire.*/',
          'fire\u0000doors',
          'emoji 🔥 fire',
          'x'.repeat(10_000),
          'fire '.repeat(2_000),
        ];
        for (const q of nasty) {
          const hits = await store.search(q, { orgId: orgA }, 5);
          expect(Array.isArray(hits)).toBe(true);
        }
        expect(ids(await store.search('"fire doors"', { orgId: orgA }, 1))).toEqual([chunks[1].id]);
        expect(docIds(await store.search('fire AND (doors OR exits)', { orgId: orgA }, 5))).toEqual(new Set([d]));
      });

      it('rejects an invalid topK or scope', async () => {
        await expectStoreError(store.search('fire', { orgId: orgA }, 0), ChunkStoreErrorCode.Validation);
        await expectStoreError(store.search('fire', { orgId: orgA }, 2.5), ChunkStoreErrorCode.Validation);
        await expectStoreError(store.search('fire', { orgId: '' }, 5), ChunkStoreErrorCode.Validation);
      });
    });

    describe('getChunks', () => {
      it("returns the org's chunks in the requested order, skipping unknown and other orgs' ids", async () => {
        const d = randomUUID();
        const mine = docChunks(orgA, d, FIRE);
        const theirs = docChunks(orgB, d, EXITS);
        await store.replaceDocumentChunks(orgA, d, mine);
        await store.replaceDocumentChunks(orgB, d, theirs);

        expect(await store.getChunks(orgA, [mine[1].id, theirs[0].id, randomUUID(), mine[0].id, mine[1].id])).toEqual([mine[1], mine[0]]);
        expect(await store.getChunks(orgA, [])).toEqual([]);
        expect(
          await store.getChunks(
            orgB,
            mine.map((c) => c.id),
          ),
        ).toEqual([]);
      });
    });

    describe('listDocumentChunks', () => {
      it('pages through a document in chunk order, whatever order the chunks were written in, with the total', async () => {
        const d = randomUUID();
        const texts = Array.from({ length: 12 }, (_, i) => `Clause ${i + 1}: keep the record of inspection number ${i + 1}.`);
        const chunks = docChunks(orgA, d, texts, { headingPath: ['Part 2', 'Scope'] });
        // Written shuffled: the order of a page comes from chunkIndex, not from insertion.
        const shuffled = [...chunks.slice(7), ...chunks.slice(0, 7).reverse()];
        await store.replaceDocumentChunks(orgA, d, shuffled);
        const other = randomUUID();
        await store.replaceDocumentChunks(orgA, other, docChunks(orgA, other, FIRE));

        expect(await store.listDocumentChunks(orgA, d, 5, 0)).toEqual({ chunks: chunks.slice(0, 5), total: 12 });
        expect(await store.listDocumentChunks(orgA, d, 5, 5)).toEqual({ chunks: chunks.slice(5, 10), total: 12 });
        expect(await store.listDocumentChunks(orgA, d, 5, 10)).toEqual({ chunks: chunks.slice(10), total: 12 });
        expect(await store.listDocumentChunks(orgA, d, 5, 12)).toEqual({ chunks: [], total: 12 });
        expect(await store.listDocumentChunks(orgA, d, 1000, 0)).toEqual({ chunks, total: 12 });
      });

      it("never lists another org's chunks of the same document id, and gives 0 for an unknown document", async () => {
        const d = randomUUID();
        await store.replaceDocumentChunks(orgB, d, docChunks(orgB, d, EXITS));
        expect(await store.listDocumentChunks(orgA, d, 10, 0)).toEqual({ chunks: [], total: 0 });
        expect(await store.listDocumentChunks(orgB, randomUUID(), 10, 0)).toEqual({ chunks: [], total: 0 });
        expect((await store.listDocumentChunks(orgB, d, 10, 0)).total).toBe(EXITS.length);
      });

      it('rejects a limit outside 1..1000 or a negative offset', async () => {
        const d = randomUUID();
        for (const [limit, offset] of [
          [0, 0],
          [1001, 0],
          [1.5, 0],
          [10, -1],
        ]) {
          await expect(store.listDocumentChunks(orgA, d, limit, offset)).rejects.toMatchObject({ code: ChunkStoreErrorCode.Validation });
        }
      });
    });

    describe('org ids', () => {
      it('treats the safety corpus as an ordinary, isolated org', async () => {
        const d = randomUUID();
        const safety = docChunks(SAFETY_CORPUS_ORG, d, ['Lockout/tagout: isolate energy sources before maintenance.']);
        await store.replaceDocumentChunks(SAFETY_CORPUS_ORG, d, safety);

        expect(ids(await store.search('lockout maintenance', { orgId: SAFETY_CORPUS_ORG }, 5))).toEqual([safety[0].id]);
        expect(await store.search('lockout maintenance', { orgId: orgA }, 5)).toEqual([]);
        await store.deleteDocuments(SAFETY_CORPUS_ORG, [d]);
        expect(await store.countChunks(SAFETY_CORPUS_ORG, d)).toBe(0);
      });

      it('handles org and document ids with quotes, backslashes and SQL fragments without leaking', async () => {
        const hostileOrg = "o'brien\\' OR 1=1 --";
        const plainOrg = 'o';
        const hostileDoc = "doc') OR ('1'='1";
        const hostile = docChunks(hostileOrg, hostileDoc, [FIRE[0]], { projectId: "p'1" });
        const plain = docChunks(plainOrg, randomUUID(), [FIRE[0]]);
        await store.replaceDocumentChunks(hostileOrg, hostileDoc, hostile);
        await store.replaceDocumentChunks(plainOrg, plain[0].documentId, plain);

        expect(ids(await store.search('fire', { orgId: hostileOrg, projectId: "p'1", documentIds: [hostileDoc] }, 5))).toEqual([hostile[0].id]);
        expect(ids(await store.search('fire', { orgId: plainOrg, documentIds: [hostileDoc] }, 5))).toEqual([]);
        expect(ids(await store.search('fire', { orgId: plainOrg }, 5))).toEqual([plain[0].id]);
        expect(await store.countChunks(hostileOrg, hostileDoc)).toBe(1);
        expect(await store.getChunks(hostileOrg, [hostile[0].id])).toEqual(hostile);
        expect(await store.deleteDocuments(plainOrg, [hostileDoc])).toBe(0);
        expect(await store.deleteDocuments(hostileOrg, [hostileDoc])).toBe(1);
        expect(await store.countChunks(plainOrg, plain[0].documentId)).toBe(1);
      });
    });

    describe('dense vectors (DenseChunkIndex)', () => {
      const SPACE = { model: 'contract-model', dimensions: 4 };
      const unit = (v: number[]) => {
        const n = Math.hypot(...v);
        return v.map((x) => x / n);
      };
      const dense = () => {
        if (!hasDenseIndex(store)) throw new Error('the adapter does not implement DenseChunkIndex');
        return store;
      };
      /** Four documents of org A (two in project P, one org-level, one in project Q) and one of org B, with vectors. */
      async function seedVectors() {
        const d = dense();
        await d.resetVectorSpace(SPACE);
        const project = randomUUID();
        const other = randomUUID();
        const docs = { fire: randomUUID(), exits: randomUUID(), ppe: randomUUID(), chem: randomUUID(), theirs: randomUUID() };
        const chunks = {
          fire: docChunks(orgA, docs.fire, FIRE, { projectId: project }),
          exits: docChunks(orgA, docs.exits, EXITS, { projectId: project }),
          ppe: docChunks(orgA, docs.ppe, PPE),
          chem: docChunks(orgA, docs.chem, CHEMICALS, { projectId: other }),
          theirs: docChunks(orgB, docs.theirs, FIRE),
        };
        const vectors: Record<keyof typeof chunks, number[][]> = {
          fire: [unit([1, 0, 0, 0]), unit([0.9, 0.1, 0, 0])],
          exits: [unit([0, 1, 0, 0]), unit([0.2, 1, 0, 0])],
          ppe: [unit([0, 0, 1, 0]), unit([0.5, 0, 1, 0])],
          chem: [unit([0.95, 0, 0, 0.05]), unit([0, 0, 0, 1])],
          theirs: [unit([1, 0, 0, 0]), unit([1, 0, 0, 0])],
        };
        for (const key of Object.keys(chunks) as (keyof typeof chunks)[]) {
          const list = chunks[key];
          await store.replaceDocumentChunks(list[0].orgId, list[0].documentId, list);
          const stored = await d.upsertVectors(
            list[0].orgId,
            list[0].documentId,
            list.map((c, i) => ({ chunkId: c.id, vector: vectors[key][i] })),
          );
          expect(stored).toBe(list.length);
        }
        return { project, other, docs, chunks };
      }

      it('records one vector space; a reset drops every vector', async () => {
        const d = dense();
        expect(await d.vectorSpace()).toBeNull();
        const { chunks } = await seedVectors();
        expect(await d.vectorSpace()).toEqual(SPACE);
        expect((await d.searchDense(unit([1, 0, 0, 0]), { orgId: orgA }, 10)).length).toBe(8);
        await d.resetVectorSpace({ model: 'another-model', dimensions: 3 });
        expect(await d.vectorSpace()).toEqual({ model: 'another-model', dimensions: 3 });
        expect(await d.searchDense([1, 0, 0], { orgId: orgA }, 10)).toEqual([]);
        // The chunks themselves stay (lexical search is unaffected).
        expect(ids(await store.search('extinguishers', { orgId: orgA }, 5))).toEqual([chunks.fire[0].id]);
      });

      it("stores vectors only for existing chunks of that document and org, of the space's length", async () => {
        const d = dense();
        const { docs, chunks } = await seedVectors();
        expect(await d.upsertVectors(orgA, docs.fire, [{ chunkId: randomUUID(), vector: unit([1, 1, 1, 1]) }])).toBe(0);
        expect(await d.upsertVectors(orgA, docs.exits, [{ chunkId: chunks.fire[0].id, vector: unit([1, 1, 1, 1]) }])).toBe(0);
        expect(await d.upsertVectors(orgB, docs.fire, [{ chunkId: chunks.fire[0].id, vector: unit([1, 1, 1, 1]) }])).toBe(0);
        await expectStoreError(d.upsertVectors(orgA, docs.fire, [{ chunkId: chunks.fire[0].id, vector: [1, 0, 0] }]), ChunkStoreErrorCode.Validation);
        // Upserting again replaces the chunk's vector.
        expect(await d.upsertVectors(orgA, docs.fire, [{ chunkId: chunks.fire[0].id, vector: unit([0, 0, 0, 1]) }])).toBe(1);
        const hits = await d.searchDense(unit([0, 0, 0, 1]), { orgId: orgA }, 2);
        expect(new Set(ids(hits))).toEqual(new Set([chunks.fire[0].id, chunks.chem[1].id]));
      });

      it('searches by cosine, best first, within org, project scope and document ids', async () => {
        const d = dense();
        const { project, docs, chunks } = await seedVectors();
        const all = await d.searchDense(unit([1, 0, 0, 0]), { orgId: orgA }, 3);
        expect(ids(all)).toEqual([chunks.fire[0].id, chunks.chem[0].id, chunks.fire[1].id]);
        expect(all[0].score).toBeCloseTo(1, 5);
        expect(all.map((h) => h.rank)).toEqual([1, 2, 3]);
        expect(all[0].chunk).toEqual(chunks.fire[0]);
        // Project scope: that project plus org-level, never project Q's chemicals.
        const scoped = await d.searchDense(unit([1, 0, 0, 0]), { orgId: orgA, projectId: project }, 10);
        expect(docIds(scoped)).toEqual(new Set([docs.fire, docs.exits, docs.ppe]));
        const some = await d.searchDense(unit([1, 0, 0, 0]), { orgId: orgA, projectId: project, documentIds: [docs.ppe, docs.chem] }, 10);
        expect(ids(some)).toEqual([chunks.ppe[1].id, chunks.ppe[0].id]);
        // Org B's identical vectors never show in org A, and the other way round.
        expect(docIds(await d.searchDense(unit([1, 0, 0, 0]), { orgId: orgB }, 10))).toEqual(new Set([docs.theirs]));
        await expectStoreError(d.searchDense([1, 0], { orgId: orgA }, 3), ChunkStoreErrorCode.Validation);
      });

      it('vectors follow their chunks: a replaced or deleted document leaves no vector behind', async () => {
        const d = dense();
        const { docs, chunks } = await seedVectors();
        const fresh = docChunks(orgA, docs.fire, ['Fire wardens are named for every floor.']);
        await store.replaceDocumentChunks(orgA, docs.fire, fresh);
        const near = await d.searchDense(unit([1, 0, 0, 0]), { orgId: orgA }, 10);
        expect(near.some((h) => h.chunk.documentId === docs.fire)).toBe(false);
        await store.deleteDocuments(orgA, [docs.chem]);
        const after = await d.searchDense(unit([1, 0, 0, 0]), { orgId: orgA }, 10);
        expect(docIds(after)).toEqual(new Set([docs.exits, docs.ppe]));
        expect(ids(await d.searchDense(unit([1, 0, 0, 0]), { orgId: orgB }, 10))).toEqual(chunks.theirs.map((c) => c.id));
      });

      it("lists every document and returns a document's chunks in order", async () => {
        const d = dense();
        const { docs, chunks } = await seedVectors();
        const listed = (await d.listDocuments()).map((x) => `${x.orgId}/${x.documentId}`).sort();
        expect(listed).toEqual([...Object.entries(docs)].map(([key, id]) => `${key === 'theirs' ? orgB : orgA}/${id}`).sort());
        expect(await d.documentChunks(orgA, docs.exits)).toEqual(chunks.exits);
        expect(await d.documentChunks(orgB, docs.exits)).toEqual([]);
      });

      if (options.serverSideFusion) {
        const fusions: FusionSettings[] = [{ method: 'rrf', k: 60 }, { method: 'dbsf' }, { method: 'convex', alpha: 0.5, normalization: 'tmm' }];
        it.each(fusions.map((f) => [f.method, f]))('hybrid search (%s): fused in scope; a query with no searchable term is dense only', async (_m, fusion) => {
          const hybrid = store as unknown as ServerSideFusionStore;
          const { project, docs, chunks } = await seedVectors();
          // Lexically and densely the best: fire[0].
          const hits = await hybrid.searchHybrid('fire extinguishers inspected', unit([1, 0, 0, 0]), { orgId: orgA }, 5, 20, fusion);
          expect(hits[0].chunk.id).toBe(chunks.fire[0].id);
          expect(hits.map((h) => h.rank)).toEqual(hits.map((_, i) => i + 1));
          expect(hits.every((h) => h.chunk.orgId === orgA)).toBe(true);
          const scoped = await hybrid.searchHybrid('flammable liquids', unit([1, 0, 0, 0]), { orgId: orgA, projectId: project }, 10, 20, fusion);
          expect(scoped.some((h) => h.chunk.documentId === docs.chem)).toBe(false);
          const denseOnly = await hybrid.searchHybrid('the of and', unit([0, 1, 0, 0]), { orgId: orgA }, 2, 20, fusion);
          expect(ids(denseOnly)).toEqual([chunks.exits[0].id, chunks.exits[1].id]);
        });
      }
    });

    describe('close', () => {
      it('is idempotent and later calls fail with Unavailable', async () => {
        const d = randomUUID();
        await store.replaceDocumentChunks(orgA, d, docChunks(orgA, d, FIRE));
        await store.close();
        await store.close();
        await expectStoreError(store.search('fire', { orgId: orgA }, 5), ChunkStoreErrorCode.Unavailable);
        await expectStoreError(store.replaceDocumentChunks(orgA, d, []), ChunkStoreErrorCode.Unavailable);
      });
    });
  });
}

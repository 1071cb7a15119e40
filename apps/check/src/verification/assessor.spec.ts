import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { passageOf } from '@kb/knowledge';
import { requirementCore, type PassageInput } from '@kb/text';
import { makeChunk } from '../../../retrieval/src/store/chunk-store.contract';
import { LanceDbChunkStore } from '../../../retrieval/src/store/lancedb-chunk-store';
import { RetrievalService } from '../../../retrieval/src/search/retrieval.service';
import { Assessor, VERIFY_TOP_K, type EvidenceSearch } from './assessor';
import { EmbeddedJudge } from './judges';

jest.setTimeout(30_000);

const ORG = randomUUID();
const SCOPE = { projectId: randomUUID(), documentIds: [] };
const ctx = { orgId: ORG, requestId: 'assessor-spec' };

// A part of a broken-down requirement and the requirement it came from. The part's words reach only
// the visitor guide; the procedure that implements the requirement shares no word with the part.
const WHOLE = 'Visitors shall wear badges, and the data centre access log shall be reviewed monthly.';
const PART = 'Visitors shall wear badges.';
const PROCEDURE = 'Facilities review the data centre access log monthly and keep the review record.';
const GUIDE = [
  'Visitors wear badges at all times.',
  'Badges for visitors are issued at reception.',
  'Reception collects visitor badges at the end of the day.',
];

let dir: string;
let store: LanceDbChunkStore;
let procedureId: string;
let evidence: EvidenceSearch;
/** What the judge read at its last call: the real lexical judge, observed. */
let read: PassageInput[] = [];
let assessor: Assessor;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kb-assessor-'));
  store = await LanceDbChunkStore.open(dir, { optimizeDelayMs: 50 });
  const service = new RetrievalService(store);
  procedureId = randomUUID();
  const guideId = randomUUID();
  await service.indexDocument(ORG, procedureId, [makeChunk({ orgId: ORG, documentId: procedureId, text: PROCEDURE, fileName: 'isms-scope.md' })]);
  await service.indexDocument(
    ORG,
    guideId,
    GUIDE.map((text, chunkIndex) => makeChunk({ orgId: ORG, documentId: guideId, text, chunkIndex, fileName: 'visitor-guide.md' })),
  );
  evidence = {
    search: async (_ctx, query, _scope, topK) => (await service.search(query, { orgId: ORG }, topK)).hits.map((h) => passageOf(h.chunk, h.score)),
    live: async (_ctx, ids) => new Set(ids),
  };
  const judge = new EmbeddedJudge(null);
  assessor = new Assessor(evidence, {
    model: judge.model,
    breakDown: (r) => judge.breakDown(r),
    judge: (r, passages, s) => {
      read = passages;
      return judge.judge(r, passages, s);
    },
  });
});
afterAll(async () => {
  await store?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('Assessor candidates', () => {
  it('reads, for a part of a broken-down requirement, the procedure that implements the whole requirement', async () => {
    const alone = await evidence.search(ctx, requirementCore(PART), SCOPE, VERIFY_TOP_K);
    // The part's own query finds the visitor guide only.
    expect(alone.map((p) => p.documentId)).not.toContain(procedureId);

    await assessor.assess(ctx, SCOPE, PART);
    expect(read.map((p) => p.documentId)).not.toContain(procedureId);

    await assessor.assess(ctx, SCOPE, PART, { whole: WHOLE });
    expect(read.map((p) => p.documentId)).toContain(procedureId);
    // Fused: what both queries found comes first, then what only one did (reciprocal rank fusion).
    expect(read.slice(0, GUIDE.length).every((p) => p.documentId !== procedureId)).toBe(true);
  });
});

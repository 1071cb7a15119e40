// The ChunkStore contract against a real Qdrant. Qdrant cannot run on the CI machines (no server
// on npm, PyPI or apt), so this suite runs only when QDRANT_URL is set, e.g.
//   docker run -p 6333:6333 qdrant/qdrant && QDRANT_URL=http://localhost:6333 npx jest apps/retrieval/src/store/qdrant --selectProjects unit
// Without it, Jest reports the suite as skipped (never as passed).
import { randomUUID } from 'node:crypto';
import { describeChunkStoreContract } from './chunk-store.contract';
import { QdrantChunkStore, scopeFilter } from './qdrant-chunk-store';

jest.setTimeout(60_000);

const url = process.env.QDRANT_URL;

if (url) {
  describeChunkStoreContract(
    'QdrantChunkStore (contract)',
    async () => {
      const collection = `kb_test_${randomUUID().replace(/-/g, '')}`;
      const store = await QdrantChunkStore.open({ url, apiKey: process.env.QDRANT_API_KEY, collection });
      return {
        store,
        cleanup: async () => {
          await store.close();
          const admin = await QdrantChunkStore.open({ url, apiKey: process.env.QDRANT_API_KEY, collection });
          await admin.dropCollection();
        },
      };
    },
    { serverSideFusion: true },
  );
} else {
  describe.skip('QdrantChunkStore (contract): skipped, QDRANT_URL is not set', () => {
    it('runs the ChunkStore contract against Qdrant', () => undefined);
  });
}

describe('Qdrant scope filter (no server needed)', () => {
  it('always filters by org, then project-or-org-level, then document ids', () => {
    expect(scopeFilter({ orgId: 'o' })).toEqual({ must: [{ key: 'org_id', match: { value: 'o' } }] });
    expect(scopeFilter({ orgId: 'o', projectId: 'p', documentIds: ['d1', 'd1', 'd2'] })).toEqual({
      must: [
        { key: 'org_id', match: { value: 'o' } },
        { should: [{ key: 'project_id', match: { value: 'p' } }, { is_null: { key: 'project_id' } }] },
        { key: 'document_id', match: { any: ['d1', 'd2'] } },
      ],
    });
    expect(() => scopeFilter({ orgId: '' })).toThrow(/orgId/);
  });
});

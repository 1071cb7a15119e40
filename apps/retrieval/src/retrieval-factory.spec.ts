import { fusionSettings, retrievalConfigFromEnv } from './retrieval-factory';
import { DEFAULT_FUSION } from './search/fusion';

describe('retrieval settings (retrievalEnv, parsed once)', () => {
  it('fills the defaults and treats empty variables as unset', () => {
    const config = retrievalConfigFromEnv({ RETRIEVAL_FUSION: '', QDRANT_URL: '' });
    expect(config).toMatchObject({ VECTOR_STORE: 'lancedb', RETRIEVAL_DATA_DIR: '.data/lancedb', RERANK_CANDIDATES: 50, QDRANT_COLLECTION: 'kb_chunks' });
    expect(config.QDRANT_URL).toBeUndefined();
    expect(fusionSettings(config)).toEqual(DEFAULT_FUSION);
  });

  it('reads the fusion variables as numbers and methods', () => {
    expect(fusionSettings(retrievalConfigFromEnv({ RETRIEVAL_FUSION: 'rrf', RETRIEVAL_RRF_K: '20' }))).toEqual({ method: 'rrf', k: 20 });
    expect(
      fusionSettings(retrievalConfigFromEnv({ RETRIEVAL_FUSION: 'convex', RETRIEVAL_FUSION_ALPHA: '0.3', RETRIEVAL_FUSION_NORMALIZATION: 'minmax' })),
    ).toEqual({ method: 'convex', alpha: 0.3, normalization: 'minmax' });
  });

  it('names the variable of an invalid value', () => {
    expect(() => retrievalConfigFromEnv({ RETRIEVAL_FUSION: 'max' })).toThrow(/RETRIEVAL_FUSION/);
    expect(() => retrievalConfigFromEnv({ RETRIEVAL_FUSION_ALPHA: '1.5' })).toThrow(/RETRIEVAL_FUSION_ALPHA/);
    expect(() => retrievalConfigFromEnv({ VECTOR_STORE: 'faiss' })).toThrow(/VECTOR_STORE/);
  });
});

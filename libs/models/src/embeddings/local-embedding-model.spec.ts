// ../shared/models holds the model as all-MiniLM-L6-v2/ (its Xenova/ alias is not a real link on every checkout).
import path from 'node:path';
import { ModelProviderError } from '../errors';
import { withEventLoopGap } from '../testing/event-loop-gap';
import { embeddingsConfigFromEnv, openEmbeddingModel } from './config';
import { LocalEmbeddingModel } from './local-embedding-model';

/** The shared test models (../shared/models beside the repository; see its README). */
const MODELS_DIR = path.resolve(__dirname, '../../../../../shared/models');
const cosine = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i], 0);

describe('LocalEmbeddingModel (all-MiniLM-L6-v2 from ../shared/models)', () => {
  let model: LocalEmbeddingModel;
  beforeAll(async () => {
    model = await LocalEmbeddingModel.load({ modelsDir: MODELS_DIR, model: 'all-MiniLM-L6-v2', batchSize: 2 });
  });

  it('gives unit-length 384-dimension vectors that put a paraphrase nearer than an unrelated sentence', async () => {
    const [req, para, other] = await model.embed([
      'Hearing protection must be worn where noise is above 85 decibels',
      'Hearing protection is required wherever noise exceeds 85 decibels',
      'All VPN connections use TLS 1.3',
    ]);
    expect(model.dimensions).toBe(384);
    expect(req).toHaveLength(384);
    expect(cosine(req, req)).toBeCloseTo(1, 4);
    expect(cosine(req, para)).toBeGreaterThan(0.8);
    expect(cosine(req, other)).toBeLessThan(0.3);
  });

  // Dynamic int8 quantization computes activation ranges per batch, padding included, so a text's
  // vector moves slightly with its batch neighbours (0.98 here); order and meaning must not.
  it('embeds a text nearly the same alone and inside a padded batch, in input order', async () => {
    const texts = ['short', 'a much longer sentence about scaffolding inspections before each shift', 'guardrails'];
    const batch = await model.embed(texts);
    for (let i = 0; i < texts.length; i++) {
      const [alone] = await model.embed([texts[i]]);
      expect(cosine(alone, batch[i])).toBeGreaterThan(0.97);
    }
  });

  it("keeps the caller's event loop free while it embeds (the forward passes run in the model's thread)", async () => {
    // 8 passes of 2 texts of 256 word pieces: in the caller's thread each would hold its event loop
    // for the whole pass (hundreds of ms to seconds on one core).
    const long = 'The contractor shall inspect every scaffold before each shift and record the inspection. '.repeat(20);
    const { longestGap, elapsed } = await withEventLoopGap(() => model.embed(Array.from({ length: 16 }, (_, i) => `${i} ${long}`)));
    expect(model.stats.passes).toBeGreaterThanOrEqual(8);
    // The timer ran all along: no gap near the length of a pass (elapsed / 8).
    expect(longestGap).toBeLessThan(Math.max(100, elapsed / 16));
  });

  it("serves the next call after the model's thread died (a new thread is started)", async () => {
    const [before] = await model.embed(['guardrails on every open edge']);
    // The thread as the runtime would lose it (an out-of-memory kill, a native crash).
    await (model as unknown as { thread: { terminate(): Promise<void> } }).thread.terminate();
    const [after] = await model.embed(['guardrails on every open edge']);
    expect(cosine(before, after)).toBeCloseTo(1, 5);
  });

  it('serves a query before bulk batches queued ahead of it', async () => {
    const order: string[] = [];
    const bulk = model.embed(Array.from({ length: 8 }, (_, i) => `document passage number ${i}`)).then(() => order.push('bulk'));
    const query = model.embed(['where must hearing protection be worn?'], undefined, 'query').then(() => order.push('query'));
    await Promise.all([bulk, query]);
    expect(order).toEqual(['query', 'bulk']);
  });

  it('with coalesce, fills a forward pass from several concurrent callers, each getting its own vectors in order', async () => {
    const model = await LocalEmbeddingModel.load({ modelsDir: MODELS_DIR, model: 'all-MiniLM-L6-v2', batchSize: 2, coalesce: true });
    const texts = ['ladder inspection', 'scaffold tags', 'hearing protection above 85 dB', 'confined space entry permit', 'hot work fire watch'];
    const alone: number[][] = [];
    for (const t of texts) alone.push((await model.embed([t]))[0]);
    const before = model.stats.passes;
    // Five callers of one text each (as enrichment embeds small documents concurrently), batch size 2.
    const results = await Promise.all(texts.map((t) => model.embed([t])));
    expect(model.stats.passes - before).toBe(3);
    results.forEach(([v], i) => expect(cosine(v, alone[i])).toBeGreaterThan(0.97));
    // A caller with several texts gets them back in its own order, whatever batches they shared.
    const [pair, single] = await Promise.all([model.embed([texts[3], texts[0]]), model.embed([texts[4]])]);
    expect(cosine(pair[0], alone[3])).toBeGreaterThan(0.97);
    expect(cosine(pair[1], alone[0])).toBeGreaterThan(0.97);
    expect(cosine(single[0], alone[4])).toBeGreaterThan(0.97);
  });

  it('rejects a caller whose signal aborts while it waits, and still serves the others', async () => {
    const controller = new AbortController();
    const first = model.embed(['first caller text']);
    const aborted = model.embed(['aborted caller text'], controller.signal);
    const last = model.embed(['last caller text']);
    controller.abort(new Error('client went away'));
    await expect(aborted).rejects.toThrow('client went away');
    expect((await first)[0]).toHaveLength(384);
    expect((await last)[0]).toHaveLength(384);
  });
});

describe('openEmbeddingModel', () => {
  it('defaults to the local provider and reports a missing model instead of failing', async () => {
    const opened = await openEmbeddingModel(embeddingsConfigFromEnv({ KB_MODELS_DIR: '/nonexistent-models' }));
    expect(opened.provider).toBe('local');
    expect(opened.model).toBeNull();
    expect(opened.reason).toMatch(/Xenova\/all-MiniLM-L6-v2 is not in \/nonexistent-models.*lexical only/);
  });

  it('loads a model from KB_MODELS_DIR', async () => {
    const opened = await openEmbeddingModel(embeddingsConfigFromEnv({ KB_MODELS_DIR: MODELS_DIR, EMBEDDINGS_MODEL: 'all-MiniLM-L6-v2' }));
    expect(opened.model?.model).toBe('all-MiniLM-L6-v2');
    expect(opened.model?.dimensions).toBe(384);
  });

  it('refuses EMBEDDINGS_DIMENSIONS that the local model does not give, naming the variable', async () => {
    await expect(
      openEmbeddingModel(embeddingsConfigFromEnv({ KB_MODELS_DIR: MODELS_DIR, EMBEDDINGS_MODEL: 'all-MiniLM-L6-v2', EMBEDDINGS_DIMENSIONS: '768' })),
    ).rejects.toThrow(/EMBEDDINGS_DIMENSIONS: 768/);
  });

  it('turns dense search off with EMBEDDINGS_PROVIDER=none and requires the endpoint settings for openai', async () => {
    expect(await openEmbeddingModel(embeddingsConfigFromEnv({ EMBEDDINGS_PROVIDER: 'none' }))).toMatchObject({ provider: 'none', model: null });
    await expect(openEmbeddingModel(embeddingsConfigFromEnv({ EMBEDDINGS_PROVIDER: 'openai' }))).rejects.toThrow(/EMBEDDINGS_BASE_URL: required/);
  });

  it('says which folder it looked in when the files are there but broken', async () => {
    const err = await LocalEmbeddingModel.load({ modelsDir: path.join(MODELS_DIR, '..'), model: 'models/all-MiniLM-L6-v2', dtype: 'fp32' }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ModelProviderError);
    expect((err as Error).message).toMatch(/is not in the models directory .*onnx\/model\.onnx/);
  });
});

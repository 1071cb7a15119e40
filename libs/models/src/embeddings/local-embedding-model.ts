import { existsSync } from 'node:fs';
import path from 'node:path';
import { ModelProviderError } from '../errors';
import { onnxSessionOptions } from '../onnx-session';
import type { EmbeddingModel, EmbedPriority } from './types';

/** Settings of {@link LocalEmbeddingModel} (from `EMBEDDINGS_*` and `KB_MODELS_DIR`, see `openEmbeddingModel`). */
export interface LocalEmbeddingModelOptions {
  /** Models directory: a model `org/name` is read from `<modelsDir>/org/name/` (transformers.js local layout). */
  modelsDir: string;
  /** Model id, e.g. `Xenova/all-MiniLM-L6-v2`; its folder holds `config.json`, `tokenizer.json` and `onnx/model_quantized.onnx` (q8) or `onnx/model.onnx` (fp32). */
  model: string;
  /** ONNX weights: `q8` (int8 quantized, `model_quantized.onnx`) or `fp32` (`model.onnx`). Default `q8`. */
  dtype?: 'q8' | 'fp32';
  /** Texts per forward pass. Default 32. Bounds peak memory: batch × maxTokens × hidden size floats. */
  batchSize?: number;
  /** Word pieces kept per text (longer texts are truncated). Default 256, the sentence-transformers `max_seq_length` of MiniLM and BGE. */
  maxTokens?: number;
  /** onnxruntime intra-op threads per forward pass. Default 1, so bulk embedding leaves a core to queries. */
  threads?: number;
  /**
   * Pooling of the token vectors: `mean` (sentence-transformers MiniLM, mpnet, E5) or `cls`
   * (BGE). Default `mean`. Vectors are always L2-normalised, so cosine = dot product.
   */
  pooling?: 'mean' | 'cls';
  /** Text put before every query (not before passages), e.g. BGE's `Represent this sentence for searching relevant passages: `. Default none. */
  queryPrefix?: string;
  /**
   * `true`: a forward pass is filled with texts of several waiting calls (see
   * {@link LocalEmbeddingModel}). `false` (default): each pass holds texts of one call only.
   * Measured on 2 shared cores, all-MiniLM-L6-v2 q8, 16 concurrent callers of one text each,
   * alternating rounds in one process: SciFact abstracts (most near the 256-token cut) 0.85x the
   * texts/s of one pass per call (padding to the batch's longest text costs more than the pass
   * overhead saved); titles only 1.06x. So it is off until a length-aware batching pays.
   */
  coalesce?: boolean;
}

/** transformers.js tokenizer and model of one pipeline, typed as far as this class uses them. */
interface Loaded {
  tokenizer: (texts: string[], options: Record<string, unknown>) => Record<string, unknown> & { attention_mask: TensorLike };
  model: ((inputs: Record<string, unknown>) => Promise<Record<string, TensorLike>>) & { config: { hidden_size?: number } };
  meanPooling: (hidden: TensorLike, mask: TensorLike) => TensorLike;
}
interface TensorLike {
  dims: number[];
  data: Float32Array | number[];
  normalize(p: number, dim: number): TensorLike;
  slice(...args: unknown[]): TensorLike;
  dispose?(): void;
}

/**
 * An embedding model run in process: a sentence-embedding ONNX model executed by
 * `@huggingface/transformers` (transformers.js) on `onnxruntime-node`, read only from a local models
 * directory (never downloaded at run time: `npm start` and the Docker build fetch the default model
 * beforehand with `tools/fetch-model.mjs`).
 *
 * Pooling and normalisation follow sentence-transformers (Reimers and Gurevych 2019): mean of the
 * token vectors under the attention mask (or the CLS vector for BGE), then L2 normalisation.
 *
 * Scheduling: one forward pass at a time, at most `batchSize` texts each, on `threads` intra-op
 * threads. Texts wait in one queue per priority and a batch is taken from the queue's head: the
 * texts of one call, or with `coalesce` texts of several waiting calls (twenty documents of two
 * chunks each make two passes of 32 and 8 texts rather than twenty of two; measured NOT faster
 * here, see {@link LocalEmbeddingModelOptions.coalesce}). Batches never mix priorities; `query`
 * texts go before every queued `bulk` text, so a search waits at most for the one batch in flight,
 * never for a whole document's embedding.
 */
export class LocalEmbeddingModel implements EmbeddingModel {
  readonly model: string;
  private dims = 0;
  private loaded: Loaded | null = null;
  /** Texts waiting for a forward pass, per priority, in call order. */
  private readonly waiting: Record<EmbedPriority, PendingText[]> = { query: [], bulk: [] };
  private busy = false;
  private passes = 0;
  private embedded = 0;

  private constructor(private readonly options: Required<Omit<LocalEmbeddingModelOptions, 'queryPrefix'>> & { queryPrefix: string }) {
    this.model = options.model;
  }

  /**
   * Forward passes run and texts embedded since load (the load's probe included), for benchmarks
   * and metrics: `texts / passes` is the mean batch size.
   */
  get stats(): { passes: number; texts: number } {
    return { passes: this.passes, texts: this.embedded };
  }

  /** Vector length, read from the model's `config.json` (`hidden_size`) when it was loaded. */
  get dimensions(): number {
    return this.dims;
  }

  /**
   * Path of a model's folder in a models directory, and whether its weights are there.
   * @returns `{ dir, present }`; `present` is true when the tokenizer and the ONNX file for `dtype` exist.
   */
  static locate(modelsDir: string, model: string, dtype: 'q8' | 'fp32' = 'q8'): { dir: string; present: boolean } {
    const dir = path.resolve(modelsDir, model);
    const weights = path.join(dir, 'onnx', dtype === 'q8' ? 'model_quantized.onnx' : 'model.onnx');
    return { dir, present: existsSync(path.join(dir, 'tokenizer.json')) && existsSync(weights) };
  }

  /**
   * Loads the model from `options.modelsDir` (no network access).
   * @throws ModelProviderError (`invalid_output`) naming the folder when the model files are missing
   *   or cannot be loaded.
   */
  static async load(options: LocalEmbeddingModelOptions): Promise<LocalEmbeddingModel> {
    const full = {
      modelsDir: options.modelsDir,
      model: options.model,
      dtype: options.dtype ?? 'q8',
      batchSize: options.batchSize ?? 32,
      maxTokens: options.maxTokens ?? 256,
      threads: options.threads ?? 1,
      pooling: options.pooling ?? 'mean',
      queryPrefix: options.queryPrefix ?? '',
      coalesce: options.coalesce ?? false,
    } as const;
    if (!Number.isInteger(full.batchSize) || full.batchSize < 1) throw new Error('batchSize must be a positive integer');
    const { dir, present } = LocalEmbeddingModel.locate(full.modelsDir, full.model, full.dtype);
    if (!present) {
      throw new ModelProviderError(
        `embedding model "${full.model}" is not in the models directory (${dir}: tokenizer.json and onnx/${full.dtype === 'q8' ? 'model_quantized' : 'model'}.onnx expected)`,
        false,
        null,
        'invalid_output',
      );
    }
    const instance = new LocalEmbeddingModel(full);
    try {
      // transformers.js is an ES module with a CommonJS build; required lazily so that services
      // without a local model never load onnxruntime.
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const hf = require('@huggingface/transformers') as typeof import('@huggingface/transformers');
      hf.env.allowRemoteModels = false;
      hf.env.allowLocalModels = true;
      hf.env.localModelPath = path.resolve(full.modelsDir) + path.sep;
      const pipe = (await hf.pipeline('feature-extraction', full.model, {
        dtype: full.dtype,
        device: 'cpu',
        session_options: onnxSessionOptions(full.threads),
      })) as unknown as { tokenizer: Loaded['tokenizer']; model: Loaded['model'] };
      instance.loaded = { tokenizer: pipe.tokenizer, model: pipe.model, meanPooling: hf.mean_pooling as unknown as Loaded['meanPooling'] };
      instance.dims = pipe.model.config.hidden_size ?? 0;
      const [probe] = await instance.embed(['dimension check']);
      instance.dims = probe.length;
    } catch (error) {
      if (error instanceof ModelProviderError) throw error;
      throw new ModelProviderError(
        `embedding model "${full.model}" could not be loaded from ${dir}: ${error instanceof Error ? error.message : String(error)}`,
        false,
        null,
        'invalid_output',
      );
    }
    return instance;
  }

  /**
   * One L2-normalised vector per text, in input order. Runs `batchSize` texts per forward pass;
   * `query` calls go before queued `bulk` batches (see the class comment).
   * @throws the abort reason when `signal` aborts before a batch starts.
   */
  async embed(texts: string[], signal?: AbortSignal, priority: EmbedPriority = 'bulk'): Promise<number[][]> {
    if (texts.length === 0) return [];
    if (signal?.aborted) throw signal.reason ?? new Error('aborted');
    const prefix = priority === 'query' ? this.options.queryPrefix : '';
    return new Promise<number[][]>((resolve, reject) => {
      const call: PendingCall = { vectors: new Array<number[]>(texts.length), remaining: texts.length, settled: false, signal, resolve, reject };
      const queue = this.waiting[priority === 'query' ? 'query' : 'bulk'];
      texts.forEach((t, index) => queue.push({ call, index, text: prefix + (t.trim() === '' ? ' ' : t) }));
      // After the current microtasks, so calls made together (Promise.all) share the first batch.
      queueMicrotask(() => void this.drain());
    });
  }

  /** Runs forward passes while texts wait: query texts first, each batch filled across callers. */
  private async drain(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      for (;;) {
        const batch = this.takeBatch();
        if (batch.length === 0) return;
        let vectors: number[][];
        try {
          this.passes++;
          this.embedded += batch.length;
          vectors = await this.forward(batch.map((p) => p.text));
        } catch (error) {
          for (const p of batch) fail(p.call, error);
          continue;
        }
        batch.forEach((p, i) => {
          if (p.call.settled) return;
          p.call.vectors[p.index] = vectors[i];
          if (--p.call.remaining === 0) succeed(p.call);
        });
      }
    } finally {
      this.busy = false;
    }
  }

  /**
   * Up to `batchSize` texts from the head of the query queue, or else of the bulk queue. Texts of
   * calls already settled (aborted, or failed in an earlier batch) are dropped; a call whose
   * signal has aborted is rejected with the abort reason here, before its next batch starts.
   */
  private takeBatch(): PendingText[] {
    for (const queue of [this.waiting.query, this.waiting.bulk]) {
      const batch: PendingText[] = [];
      while (queue.length > 0 && batch.length < this.options.batchSize) {
        if (!this.options.coalesce && batch.length > 0 && queue[0].call !== batch[0].call) break;
        const next = queue.shift()!;
        if (!next.call.settled && next.call.signal?.aborted) fail(next.call, next.call.signal.reason ?? new Error('aborted'));
        if (!next.call.settled) batch.push(next);
      }
      if (batch.length > 0) return batch;
    }
    return [];
  }

  private async forward(batch: string[]): Promise<number[][]> {
    const { tokenizer, model, meanPooling } = this.loaded!;
    const inputs = tokenizer(batch, { padding: true, truncation: true, max_length: this.options.maxTokens });
    const outputs = await model(inputs);
    const hidden = outputs.last_hidden_state ?? outputs.token_embeddings ?? Object.values(outputs)[0];
    const pooled = this.options.pooling === 'cls' ? hidden.slice(null, 0, null) : meanPooling(hidden, inputs.attention_mask);
    const normalized = pooled.normalize(2, -1);
    const [rows, width] = normalized.dims;
    const data = normalized.data;
    // One copy per vector, straight from the output tensor into the number[] the port returns.
    const vectors: number[][] = [];
    for (let r = 0; r < rows; r++) {
      const vector = new Array<number>(width);
      for (let i = 0, at = r * width; i < width; i++) vector[i] = data[at + i];
      vectors.push(vector);
    }
    return vectors;
  }
}

/** One `embed` call waiting for its vectors. */
interface PendingCall {
  vectors: number[][];
  /** Texts of the call not yet embedded. */
  remaining: number;
  settled: boolean;
  signal?: AbortSignal;
  resolve(vectors: number[][]): void;
  reject(error: unknown): void;
}

/** One text of a call, as queued (query prefix applied). */
interface PendingText {
  call: PendingCall;
  /** Position of the text in the call's input. */
  index: number;
  text: string;
}

/** Resolves `call` with its vectors (once; a settled call is left alone). */
function succeed(call: PendingCall): void {
  if (call.settled) return;
  call.settled = true;
  call.resolve(call.vectors);
}

/** Rejects `call` with `error` (once; a settled call is left alone). */
function fail(call: PendingCall, error: unknown): void {
  if (call.settled) return;
  call.settled = true;
  call.reject(error);
}

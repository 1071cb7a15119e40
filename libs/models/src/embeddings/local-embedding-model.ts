import { workerScript } from '@kb/common';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { ModelProviderError } from '../errors';
import { ModelThread } from '../model-thread';
import type { EmbeddingWorkerInit, EmbeddingWorkerMessage } from './embedding-worker';
import type { EmbeddingModel, EmbedPriority } from './types';

/**
 * Texts per forward pass of the `local` model by default. A search's query waits for the bulk pass in
 * progress (one at a time), and a pass of 32 passages of ~250 word pieces holds the model for about 3 s
 * on one core while small passes embed as fast: measured embedding 640 SciFact abstracts with a query
 * every 200 ms (docs/retrieval.md "The local model's passes"): batch 32 → 4 on 2 threads, query p50
 * 1,501 → 25–65 ms, bulk 33.6 → 32.3–34.0 s.
 */
export const DEFAULT_LOCAL_EMBEDDINGS_BATCH_SIZE = 4;

/** Settings of {@link LocalEmbeddingModel} (from `EMBEDDINGS_*` and `KB_MODELS_DIR`, see `openEmbeddingModel`). */
export interface LocalEmbeddingModelOptions {
  /** Models directory: a model `org/name` is read from `<modelsDir>/org/name/` (transformers.js local layout). */
  modelsDir: string;
  /** Model id, e.g. `Xenova/all-MiniLM-L6-v2`; its folder holds `config.json`, `tokenizer.json` and `onnx/model_quantized.onnx` (q8) or `onnx/model.onnx` (fp32). */
  model: string;
  /** ONNX weights: `q8` (int8 quantized, `model_quantized.onnx`) or `fp32` (`model.onnx`). Default `q8`. */
  dtype?: 'q8' | 'fp32';
  /** Texts per forward pass. Default {@link DEFAULT_LOCAL_EMBEDDINGS_BATCH_SIZE}. Bounds peak memory: batch × maxTokens × hidden size floats. */
  batchSize?: number;
  /** Word pieces kept per text (longer texts are truncated). Default 256, the sentence-transformers `max_seq_length` of MiniLM and BGE. */
  maxTokens?: number;
  /** onnxruntime intra-op threads per forward pass. Default 1 (the services' `EMBEDDINGS_THREADS` default is 2). */
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
 *
 * Thread: the forward passes run in a worker thread (embedding-worker.ts), because onnxruntime-node
 * runs a session synchronously on the calling thread: on the service's own thread a pass of 32
 * texts of 256 word pieces held the event loop for up to 3 s on one AVX2 core, so during bulk
 * embedding every index write, search and gRPC keepalive answer of the retrieval service waited
 * pass after pass (a text PDF's index call took 10–33 s instead of under one: docs/ingestion.md).
 * The worker does not keep the process alive while no pass is pending.
 */
export class LocalEmbeddingModel implements EmbeddingModel {
  readonly model: string;
  private dims = 0;
  private readonly thread: ModelThread<Extract<EmbeddingWorkerMessage, { kind: 'ready' }>, Extract<EmbeddingWorkerMessage, { kind: 'vectors' }>>;
  /** Texts waiting for a forward pass, per priority, in call order. */
  private readonly waiting: Record<EmbedPriority, PendingText[]> = { query: [], bulk: [] };
  private busy = false;
  private passes = 0;
  private embedded = 0;

  private constructor(private readonly options: Required<Omit<LocalEmbeddingModelOptions, 'queryPrefix'>> & { queryPrefix: string }) {
    this.model = options.model;
    this.thread = new ModelThread(workerScript(__dirname, __filename, 'embedding-worker'), pickInit(options), 'embedding');
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
      batchSize: options.batchSize ?? DEFAULT_LOCAL_EMBEDDINGS_BATCH_SIZE,
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
      instance.dims = (await instance.thread.start()).dimensions;
      const [probe] = await instance.embed(['dimension check']);
      instance.dims = probe.length;
    } catch (error) {
      void instance.thread.terminate();
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

  /**
   * One forward pass in the model's thread.
   * @returns one vector per text, in order. @throws as `ModelThread.request`.
   */
  private async forward(batch: string[]): Promise<number[][]> {
    const m = await this.thread.request({ texts: batch });
    // One copy per vector, straight from the transferred array into the number[] the port returns.
    const vectors: number[][] = [];
    for (let r = 0; r < m.rows; r++) {
      const vector = new Array<number>(m.width);
      for (let i = 0, at = r * m.width; i < m.width; i++) vector[i] = m.data[at + i];
      vectors.push(vector);
    }
    return vectors;
  }
}

/** The worker's settings, out of the model's options. */
function pickInit(o: EmbeddingWorkerInit): EmbeddingWorkerInit {
  return { modelsDir: o.modelsDir, model: o.model, dtype: o.dtype, threads: o.threads, maxTokens: o.maxTokens, pooling: o.pooling };
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

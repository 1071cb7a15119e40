import { workerScript } from '@kb/common';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { ModelProviderError } from '../errors';
import { ModelThread } from '../model-thread';
import type { NliWorkerInit, NliWorkerMessage } from './nli-worker';

/** One premise/hypothesis pair: premise = a document sentence, hypothesis = a requirement. */
export interface NliPair {
  premise: string;
  hypothesis: string;
}

/** Softmax probabilities of the three relations of a pair (they sum to 1). */
export interface NliScores {
  entailment: number;
  contradiction: number;
  neutral: number;
}

/**
 * Label names of the three classes in a model folder's `config.json` `id2label`: an entailment model's, or the
 * requirement-satisfaction model's (satisfies / contradicts / unrelated), read as the same three relations.
 */
const LABEL_NAMES = { entailment: ['entailment', 'satisfies'], contradiction: ['contradiction', 'contradicts'], neutral: ['neutral', 'unrelated'] };

/** Settings of {@link LocalNliModel.load}. */
export interface LocalNliModelOptions {
  /** The model's folder: `config.json` (with `id2label`), `tokenizer.json` and `onnx/model_quantized.onnx`. */
  dir: string;
  /** Pairs per forward pass. Default 8 (pairs of one verify are few; padding grows with the batch's longest pair). */
  batchSize?: number;
  /** Word pieces kept per pair, the longer text truncated first. Default: the folder's `metrics.json` `max_length` (the training length), else 128. */
  maxTokens?: number;
  /** onnxruntime intra-op threads per forward pass. Default 1 (the embedding model's default too). */
  threads?: number;
  /**
   * Worker threads, each with its own session of the model, running the passes of different calls side by side.
   * Default 1. A pass's scores do not depend on which worker runs it nor on `threads` (the same int8 products).
   */
  workers?: number;
}

/**
 * A three-way cross-encoder of the embedded judge run in process: a `BertForSequenceClassification`
 * ONNX model (int8 quantized) executed by `@huggingface/transformers` on `onnxruntime-node`, read only
 * from a local folder. Given (premise, hypothesis) pairs it returns P(entailment), P(contradiction),
 * P(neutral) (softmax of the logits; label order from the folder's `config.json` `id2label`). Two committed
 * models use it: the requirement-satisfaction model `libs/text/models/judge-rsm-minilm` (premise = an evidence
 * unit, hypothesis = a requirement's core statement; its labels satisfies / contradicts / unrelated are read as
 * entailment / contradiction / neutral; `npm run train:rsm`) and the entailment model
 * `libs/text/models/judge-nli-minilm` (`npm run train:nli`); see docs/check.md "The embedded judge".
 * Forward passes run in the model's own worker threads (`nli-worker.ts`): onnxruntime-node runs a pass synchronously
 * on the calling thread, which would hold the caller's event loop for the whole pass. Each worker runs its passes one
 * at a time, in the order they are sent; a call's passes all go to the worker with the fewest passes waiting. A
 * thread is started again when it dies (its pending passes fail with a retryable `ModelProviderError`).
 */
export class LocalNliModel {
  private readonly threads: Array<ModelThread<{ kind: 'ready' }, Extract<NliWorkerMessage, { kind: 'logits' }>>>;
  private constructor(
    readonly dir: string,
    private readonly order: { entailment: number; contradiction: number; neutral: number },
    private readonly options: Required<Omit<LocalNliModelOptions, 'dir'>>,
  ) {
    const init: NliWorkerInit = { dir, threads: options.threads, maxTokens: options.maxTokens };
    this.threads = Array.from({ length: options.workers }, () => new ModelThread(workerScript(__dirname, __filename, 'nli-worker'), init, path.basename(dir)));
  }

  /** Model name for logs: the folder's base name (e.g. `judge-nli-minilm`). */
  get name(): string {
    return path.basename(this.dir);
  }

  /** Whether `dir` holds a loadable model (tokenizer, config and the int8 ONNX file). */
  static present(dir: string): boolean {
    return ['tokenizer.json', 'config.json', 'onnx/model_quantized.onnx'].every((f) => existsSync(path.join(dir, f)));
  }

  /**
   * Loads the model from `options.dir` (no network access).
   * @throws ModelProviderError (`invalid_output`) naming the folder when files are missing, the
   *   labels are not entailment/contradiction/neutral, or the model cannot be loaded.
   */
  static async load(options: LocalNliModelOptions): Promise<LocalNliModel> {
    const dir = path.resolve(options.dir);
    const fail = (why: string) => new ModelProviderError(`entailment model could not be loaded from ${dir}: ${why}`, false, null, 'invalid_output');
    if (!LocalNliModel.present(dir)) throw fail('tokenizer.json, config.json and onnx/model_quantized.onnx expected');
    let order: { entailment: number; contradiction: number; neutral: number };
    try {
      const { id2label } = JSON.parse(readFileSync(path.join(dir, 'config.json'), 'utf8')) as { id2label: Record<string, string> };
      const index = (names: string[]) => Number(Object.entries(id2label).find(([, l]) => names.includes(l.toLowerCase()))?.[0] ?? NaN);
      order = { entailment: index(LABEL_NAMES.entailment), contradiction: index(LABEL_NAMES.contradiction), neutral: index(LABEL_NAMES.neutral) };
    } catch (error) {
      throw fail(error instanceof Error ? error.message : String(error));
    }
    if (Object.values(order).some((i) => !Number.isInteger(i)))
      throw fail('config.json id2label must name entailment, contradiction and neutral (or satisfies, contradicts, unrelated)');
    // The length the model was trained with (metrics.json `max_length`, written by the training scripts), unless set.
    let trainedLength: number | undefined;
    try {
      trainedLength = Number((JSON.parse(readFileSync(path.join(dir, 'metrics.json'), 'utf8')) as { max_length?: unknown }).max_length) || undefined;
    } catch {
      trainedLength = undefined;
    }
    const instance = new LocalNliModel(dir, order, {
      batchSize: options.batchSize ?? 8,
      maxTokens: options.maxTokens ?? trainedLength ?? 128,
      threads: options.threads ?? 1,
      workers: Math.max(1, Math.floor(options.workers ?? 1)),
    });
    try {
      await Promise.all(instance.threads.map((t) => t.start()));
      await instance.score([{ premise: 'probe', hypothesis: 'probe' }]);
      return instance;
    } catch (error) {
      for (const t of instance.threads) void t.terminate();
      if (error instanceof ModelProviderError) throw error;
      throw fail(error instanceof Error ? error.message : String(error));
    }
  }

  /**
   * Scores each pair, in input order; pairs run `batchSize` at a time, sorted by length so a batch pads
   * little. A forward pass holds pairs of one call only (the int8 model's scores depend on the batch: a call's scores
   * do not depend on the calls beside it); the passes of concurrent calls wait in the worker's queue, so the thread
   * has its next pass as soon as one ends. @throws the abort reason when `signal` aborts before a batch is sent;
   * ModelProviderError (retryable) when the model's thread died during a pass; Error with the model's message when
   * a pass fails.
   */
  async score(pairs: NliPair[], signal?: AbortSignal): Promise<NliScores[]> {
    if (pairs.length === 0) return [];
    const order = pairs.map((p, i) => ({ p, i, n: p.premise.length + p.hypothesis.length })).sort((a, b) => a.n - b.n || a.i - b.i);
    const out = new Array<NliScores>(pairs.length);
    const waiting = this.threads.map((t) => t.pending);
    const worker = waiting.indexOf(Math.min(...waiting));
    for (let k = 0; k < order.length; k += this.options.batchSize) {
      if (signal?.aborted) throw signal.reason ?? new Error('aborted');
      const group = order.slice(k, k + this.options.batchSize);
      const logits = await this.forward(
        worker,
        group.map((g) => g.p.premise.trim() || ' '),
        group.map((g) => g.p.hypothesis.trim() || ' '),
      );
      const { width } = logits;
      group.forEach((g, r) => {
        const row = Array.from(logits.data.subarray(r * width, (r + 1) * width));
        const max = Math.max(...row);
        const e = row.map((x) => Math.exp(x - max));
        const sum = e.reduce((s, x) => s + x, 0);
        out[g.i] = { entailment: e[this.order.entailment] / sum, contradiction: e[this.order.contradiction] / sum, neutral: e[this.order.neutral] / sum };
      });
    }
    return out;
  }

  /**
   * One forward pass over the pairs (premises[i], hypotheses[i]) in worker thread `worker`.
   * @returns the logits, row-major, `rows` × `width` (the model's label order). @throws as `ModelThread.request`.
   */
  private async forward(worker: number, premises: string[], hypotheses: string[]): Promise<{ rows: number; width: number; data: Float32Array }> {
    return this.threads[worker].request({ premises, hypotheses });
  }
}

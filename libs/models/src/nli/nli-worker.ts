/**
 * The worker thread of {@link LocalNliModel} (local-nli-model.ts): loads a cross-encoder (tokenizer and
 * `BertForSequenceClassification` ONNX model, transformers.js on onnxruntime-node) and runs its forward passes, one
 * message at a time. onnxruntime-node runs a session synchronously on the calling thread: on the check service's own
 * thread a pass of 4 pairs (45-90 ms on 2 cores) held its event loop, so retrieval answers, run-item writes and the
 * other requirements' judging waited behind every pass (docs/check.md "Performance": the run's main thread was busy
 * for most of a 1,000-requirement run). The same reason, and the same protocol, as `embedding-worker.ts`.
 *
 * Protocol (structured clone): `workerData` is {@link NliWorkerInit}; the worker posts `{ kind: 'ready' }` or
 * `{ kind: 'load-error', message }`, then answers each {@link NliRequest} (one forward pass: the pairs given, padded
 * to the longest) with `{ kind: 'logits', id, rows, width, data }` (a transferred Float32Array, row-major, the raw
 * logits in the model's label order) or `{ kind: 'error', id, message }`. Imports: relative modules and packages only
 * (worker-script.ts).
 */
import path from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import { serveForwardPasses } from '../model-thread-serve';
import { onnxSessionOptions } from '../onnx-session';

/** What the worker is started with. */
export interface NliWorkerInit {
  /** The model's folder (`config.json`, `tokenizer.json`, `onnx/model_quantized.onnx`). */
  dir: string;
  /** onnxruntime intra-op threads per forward pass. */
  threads: number;
  /** Word pieces kept per pair, the longer text truncated first. */
  maxTokens: number;
}

/** One forward pass: premises and hypotheses of the same length, pair i = (premises[i], hypotheses[i]). */
export interface NliRequest {
  id: number;
  premises: string[];
  hypotheses: string[];
}

/** Messages from the worker. */
export type NliWorkerMessage =
  | { kind: 'ready' }
  | { kind: 'load-error'; message: string }
  | { kind: 'logits'; id: number; rows: number; width: number; data: Float32Array }
  | { kind: 'error'; id: number; message: string };

interface TensorLike {
  dims: number[];
  data: Float32Array | number[];
}

async function main(init: NliWorkerInit): Promise<void> {
  const port = parentPort!;
  let tokenizer: (a: string[], o: Record<string, unknown>) => Record<string, unknown>;
  let model: (inputs: Record<string, unknown>) => Promise<{ logits: TensorLike }>;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const hf = require('@huggingface/transformers') as typeof import('@huggingface/transformers');
    hf.env.allowRemoteModels = false;
    hf.env.allowLocalModels = true;
    hf.env.localModelPath = path.dirname(init.dir) + path.sep;
    const name = path.basename(init.dir);
    tokenizer = await hf.AutoTokenizer.from_pretrained(name, { local_files_only: true });
    model = await hf.AutoModelForSequenceClassification.from_pretrained(name, {
      dtype: 'q8',
      device: 'cpu',
      local_files_only: true,
      session_options: onnxSessionOptions(init.threads),
    });
  } catch (error) {
    port.postMessage({ kind: 'load-error', message: error instanceof Error ? error.message : String(error) } satisfies NliWorkerMessage);
    return;
  }
  // Requests are answered in order, one forward pass at a time.
  serveForwardPasses<NliRequest>(port, 'logits', async (request) => {
    const inputs = tokenizer(request.premises, { text_pair: request.hypotheses, padding: true, truncation: true, max_length: init.maxTokens });
    const { logits } = await model(inputs);
    const [rows, width] = logits.dims;
    return { rows, width, data: Float32Array.from(logits.data) };
  });
  port.postMessage({ kind: 'ready' } satisfies NliWorkerMessage);
}

if (parentPort) void main(workerData as NliWorkerInit);

/**
 * The worker thread of {@link LocalEmbeddingModel} (local-embedding-model.ts): loads the
 * transformers.js feature-extraction pipeline and runs its forward passes, one message at a time.
 * onnxruntime-node runs a session synchronously on the calling thread, so a forward pass (up to
 * seconds for 32 texts of 256 word pieces on one core) on the service's own thread would stop its
 * event loop: index writes, searches and gRPC keepalive answers waited behind bulk embedding.
 *
 * Protocol (structured clone): `workerData` is {@link EmbeddingWorkerInit}; the worker posts
 * `{ kind: 'ready', dimensions }` or `{ kind: 'load-error', message }`, then answers each
 * `{ id, texts }` with `{ id, rows, width, data }` (a transferred Float32Array, row-major,
 * L2-normalised) or `{ id, error }`. Imports: relative modules and packages only (worker-script.ts).
 */
import path from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import { serveForwardPasses } from '../model-thread-serve';
import { onnxSessionOptions } from '../onnx-session';

/** What the worker is started with. */
export interface EmbeddingWorkerInit {
  modelsDir: string;
  model: string;
  dtype: 'q8' | 'fp32';
  threads: number;
  maxTokens: number;
  pooling: 'mean' | 'cls';
}

/** A request for one forward pass. */
export interface EmbeddingRequest {
  id: number;
  texts: string[];
}

/** Messages from the worker. */
export type EmbeddingWorkerMessage =
  | { kind: 'ready'; dimensions: number }
  | { kind: 'load-error'; message: string }
  | { kind: 'vectors'; id: number; rows: number; width: number; data: Float32Array }
  | { kind: 'error'; id: number; message: string };

interface TensorLike {
  dims: number[];
  data: Float32Array | number[];
  normalize(p: number, dim: number): TensorLike;
  slice(...args: unknown[]): TensorLike;
}

async function main(init: EmbeddingWorkerInit): Promise<void> {
  const port = parentPort!;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const hf = require('@huggingface/transformers') as typeof import('@huggingface/transformers');
  hf.env.allowRemoteModels = false;
  hf.env.allowLocalModels = true;
  hf.env.localModelPath = path.resolve(init.modelsDir) + path.sep;
  let pipe: {
    tokenizer: (texts: string[], options: Record<string, unknown>) => Record<string, unknown> & { attention_mask: TensorLike };
    model: ((inputs: Record<string, unknown>) => Promise<Record<string, TensorLike>>) & { config: { hidden_size?: number } };
  };
  try {
    pipe = (await hf.pipeline('feature-extraction', init.model, {
      dtype: init.dtype,
      device: 'cpu',
      session_options: onnxSessionOptions(init.threads),
    })) as unknown as typeof pipe;
  } catch (error) {
    port.postMessage({ kind: 'load-error', message: error instanceof Error ? error.message : String(error) } satisfies EmbeddingWorkerMessage);
    return;
  }
  const meanPooling = hf.mean_pooling as unknown as (hidden: TensorLike, mask: TensorLike) => TensorLike;
  // Requests are answered in order, one forward pass at a time.
  serveForwardPasses<EmbeddingRequest>(port, 'vectors', async ({ texts }) => {
    const inputs = pipe.tokenizer(texts, { padding: true, truncation: true, max_length: init.maxTokens });
    const outputs = await pipe.model(inputs);
    const hidden = outputs.last_hidden_state ?? outputs.token_embeddings ?? Object.values(outputs)[0];
    const pooled = init.pooling === 'cls' ? hidden.slice(null, 0, null) : meanPooling(hidden, inputs.attention_mask);
    const normalized = pooled.normalize(2, -1);
    const [rows, width] = normalized.dims;
    return { rows, width, data: Float32Array.from(normalized.data) };
  });
  port.postMessage({ kind: 'ready', dimensions: pipe.model.config.hidden_size ?? 0 } satisfies EmbeddingWorkerMessage);
}

if (parentPort) void main(workerData as EmbeddingWorkerInit);

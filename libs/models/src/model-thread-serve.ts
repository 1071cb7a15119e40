import type { MessagePort } from 'node:worker_threads';

/** A forward pass's output as the worker sends it: `rows` × `width` floats, row-major. */
export interface ForwardOutput {
  rows: number;
  width: number;
  data: Float32Array<ArrayBuffer>;
}

/**
 * The worker side of `ModelThread` (model-thread.ts), for a model's worker script (`embedding-worker.ts`,
 * `nli-worker.ts`): answers each request arriving on `port` in order, one forward pass at a time, with
 * `{ kind, id, rows, width, data }` (`data` transferred, not copied) or `{ kind: 'error', id, message }` when `forward`
 * throws. Imports nothing but types (worker-script.ts).
 * @param kind the answer's `kind` (`vectors`, `logits`).
 */
export function serveForwardPasses<Request extends { id: number }>(
  port: MessagePort,
  kind: string,
  forward: (request: Request) => Promise<ForwardOutput>,
): void {
  let chain = Promise.resolve();
  port.on('message', (request: Request) => {
    chain = chain.then(async () => {
      try {
        const { rows, width, data } = await forward(request);
        port.postMessage({ kind, id: request.id, rows, width, data }, [data.buffer]);
      } catch (error) {
        port.postMessage({ kind: 'error', id: request.id, message: error instanceof Error ? error.message : String(error) });
      }
    });
  });
}

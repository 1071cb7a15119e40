import { Worker } from 'node:worker_threads';
import { ModelProviderError } from './errors';

/**
 * What a model's worker script posts: `{ kind: 'ready', … }` once it has loaded the model, or `{ kind: 'load-error',
 * message }`; then one answer per request, `{ kind: 'error', id, message }` or any other message carrying the
 * request's `id`.
 */
export type ModelThreadMessage =
  { kind: 'ready' } | { kind: 'load-error'; message: string } | { kind: 'error'; id: number; message: string } | { kind: string; id: number };

/**
 * The worker thread an in-process model runs its forward passes in (`embedding-worker.ts`, `nli-worker.ts`).
 * onnxruntime-node runs a session synchronously on the calling thread: on a service's own thread every pass would
 * hold its event loop (index writes, searches, gRPC keepalive answers and API calls waited behind passes).
 *
 * Requests are numbered and answered in the order they are sent; `Answer` is the worker's answer type. The thread
 * does not keep the process alive while no request is pending. A thread that stops (an out-of-memory kill, a native
 * crash) fails its pending requests with a retryable `ModelProviderError` (`network`), and the next request starts a
 * new one.
 */
export class ModelThread<Ready extends { kind: 'ready' }, Answer extends { kind: string; id: number }> {
  private worker: Worker | null = null;
  /** Requests sent to the worker and not answered yet, by id. */
  private readonly inflight = new Map<number, { resolve(answer: Answer): void; reject(error: unknown): void }>();
  private nextRequest = 0;

  /**
   * @param script the worker script (`workerScript(...)` of `@kb/common`). @param init its `workerData`.
   * @param label the model's name in errors ("the <label> model's thread stopped").
   */
  constructor(
    private readonly script: { filename: string; eval: boolean },
    private readonly init: unknown,
    private readonly label: string,
  ) {}

  /**
   * Starts the worker thread and waits until it has loaded the model.
   * @returns the worker's `ready` message. @throws Error with the worker's message when loading fails.
   */
  start(): Promise<Ready> {
    const worker = new Worker(this.script.filename, { eval: this.script.eval, workerData: this.init });
    this.worker = worker;
    return new Promise<Ready>((resolve, reject) => {
      let ready = false;
      worker.on('message', (m: ModelThreadMessage) => {
        if (m.kind === 'ready') {
          ready = true;
          worker.unref(); // idle: the model's thread alone does not keep the process alive
          resolve(m as Ready);
        } else if (m.kind === 'load-error') reject(new Error((m as { message: string }).message));
        else this.settle(m as Answer | { kind: 'error'; id: number; message: string });
      });
      // 'error' and then 'exit' both report a thread that stopped; only the current thread's requests are failed.
      const lost = (error: Error) => {
        if (!ready) reject(error);
        if (this.worker !== worker) return;
        this.worker = null;
        // Retryable: the next request starts a new thread (request).
        for (const pending of this.inflight.values())
          pending.reject(new ModelProviderError(`the ${this.label} model's thread stopped: ${error.message}`, true, null, 'network'));
        this.inflight.clear();
      };
      worker.on('error', lost);
      worker.on('exit', (code) => lost(new Error(`exit code ${code}`)));
    });
  }

  /**
   * Sends one request (`body` plus a fresh `id`) to the worker thread, started again if it stopped; the thread is
   * referenced (keeps the process alive) while requests are pending.
   * @returns the worker's answer. @throws Error with the worker's message when it answers `error`; ModelProviderError
   *   (retryable) when the thread stops first; the load error when a restarted thread cannot load the model.
   */
  async request(body: Record<string, unknown>): Promise<Answer> {
    if (!this.worker) await this.start();
    const worker = this.worker!;
    const id = this.nextRequest++;
    return new Promise<Answer>((resolve, reject) => {
      this.inflight.set(id, { resolve, reject });
      worker.ref();
      worker.postMessage({ ...body, id });
    });
  }

  /** Requests sent and not answered yet. */
  get pending(): number {
    return this.inflight.size;
  }

  /** Stops the thread (pending requests fail as for a lost thread); the next request starts a new one. */
  async terminate(): Promise<void> {
    await this.worker?.terminate();
  }

  /** Settles the request a worker message answers. */
  private settle(m: Answer | { kind: 'error'; id: number; message: string }): void {
    const pending = this.inflight.get(m.id);
    if (!pending) return;
    this.inflight.delete(m.id);
    if (this.inflight.size === 0) this.worker?.unref();
    if (m.kind === 'error') pending.reject(new Error((m as { message: string }).message));
    else pending.resolve(m as Answer);
  }
}

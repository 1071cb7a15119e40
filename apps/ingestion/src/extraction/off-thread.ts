/**
 * Off-thread extraction: the formats marked `offThread` in DOCUMENT_FORMATS (@kb/common), DOCX,
 * XLSX, PPTX and HTML, are parsed by JavaScript libraries (mammoth, exceljs, JSZip, cheerio) that
 * work synchronously for seconds on a large file. Run on the service's
 * event loop, they would stop its heartbeats (JetStream then redelivers the document to another
 * worker after the ack wait) and freeze every other job of the process. Each such extraction runs
 * in a `worker_threads` Worker (worker.ts) that parses one document at a time, so that:
 * - the event loop stays free (heartbeats, progress events, other documents);
 * - its JavaScript heap is capped (`resourceLimits.maxOldGenerationSizeMb`, `ctx.maxHeapMb`): a file
 *   that needs more fails that document with `TOO_LARGE` instead of killing the process;
 * - the time limit and cancellation terminate the thread, which stops the parse mid-way (in-thread,
 *   library code could not be interrupted and ran on in the background).
 * A thread is kept for the next document (ExtractionWorkerPool below): starting one costs its module loading, which
 * was most of the work for a small office file.
 */
import { documentFormat, workerScript } from '@kb/common';
import { statSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { ExtractionContext } from './context';
import { ExtractedDocument, ExtractionError, ExtractionErrorCode } from './types';

/** The job a worker receives as `workerData`. */
export interface WorkerJob {
  contentType: string;
  filePath: string;
  options: { maxPages: number; maxTextBytes: number; maxUnzippedBytes: number; ocr: boolean; deferOcr: boolean; deferLayout: boolean };
}

/** An error crossing the thread boundary: an `ExtractionError` (with `extractionCode`) or any other error. */
export interface SerializedError {
  name: string;
  message: string;
  stack?: string;
  code?: string;
  extractionCode?: ExtractionErrorCode;
}

/** Messages from a worker (see worker.ts). */
export type WorkerMessage =
  | { kind: 'progress'; stage: 'extracting' | 'ocr'; done: number | null; total: number | null }
  | { kind: 'result'; document: ExtractedDocument }
  | { kind: 'error'; error: SerializedError };

function deserialize(e: SerializedError): Error {
  if (e.extractionCode) return new ExtractionError(e.extractionCode, e.message);
  const error = new Error(e.message) as NodeJS.ErrnoException;
  error.name = e.name;
  if (e.stack) error.stack = e.stack;
  if (e.code) error.code = e.code;
  return error;
}

/** How long an idle extraction thread is kept for the next document before it is ended (ms). */
export const IDLE_WORKER_MS = 30_000;

/** Documents one extraction thread parses before it is ended and a fresh one started (bounds what a library could leak). */
export const MAX_JOBS_PER_WORKER = 100;

/**
 * Largest file (bytes) after which the thread is kept for the next document. After a larger file it is ended, so
 * the heap that file grew is given back at once rather than held by an idle thread; its start-up cost is small next
 * to such a file's parse anyway.
 */
export const REUSE_MAX_FILE_BYTES = 4 * 1024 * 1024;

interface PooledWorker {
  worker: Worker;
  jobs: number;
  idleTimer?: NodeJS.Timeout;
}

/**
 * Extraction threads kept between documents, by heap cap (a thread's cap is fixed when it starts). Starting a thread
 * costs its module loading (the extractors and their libraries: 0.7 s on an idle 2-core machine, about 3 s while the
 * embedding model and another extraction share the cores, against 40 ms for parsing a small DOCX), which dominated the
 * extraction of small office files (issue 33, docs/ingestion.md "Large files"). A thread runs one document at a time;
 * it is ended instead of kept when its document timed out, was cancelled or failed the thread (out of heap, crash),
 * after {@link MAX_JOBS_PER_WORKER} documents, after a file over {@link REUSE_MAX_FILE_BYTES}, and after
 * {@link IDLE_WORKER_MS} idle. Idle threads do not keep the process alive (`unref`).
 */
class ExtractionWorkerPool {
  private readonly idle = new Map<number, PooledWorker[]>();
  /** Threads started since the process began. */
  started = 0;

  /** Threads kept idle for the next document now. */
  get idleCount(): number {
    return [...this.idle.values()].reduce((n, list) => n + list.length, 0);
  }

  /** An idle thread with heap cap `maxHeapMb`, or a new one. */
  acquire(maxHeapMb: number): PooledWorker {
    const pooled = this.idle.get(maxHeapMb)?.pop();
    if (pooled) {
      clearTimeout(pooled.idleTimer);
      pooled.worker.removeAllListeners('exit');
      pooled.worker.removeAllListeners('error');
      pooled.worker.ref();
      return pooled;
    }
    // From sources (Jest) the worker compiles its modules with TypeScript, in the capped heap too.
    const script = workerScript(__dirname, __filename, 'worker');
    this.started++;
    return { worker: new Worker(script.filename, { eval: script.eval, resourceLimits: { maxOldGenerationSizeMb: maxHeapMb } }), jobs: 0 };
  }

  /** Keeps `pooled` for the next document (see the class comment for when it is ended instead). */
  release(pooled: PooledWorker, maxHeapMb: number, fileBytes: number): void {
    pooled.worker.removeAllListeners('message');
    pooled.worker.removeAllListeners('error');
    pooled.worker.removeAllListeners('exit');
    if (pooled.jobs >= MAX_JOBS_PER_WORKER || fileBytes > REUSE_MAX_FILE_BYTES) {
      void pooled.worker.terminate();
      return;
    }
    const list = this.idle.get(maxHeapMb) ?? [];
    this.idle.set(maxHeapMb, list);
    list.push(pooled);
    const drop = () => {
      const i = list.indexOf(pooled);
      if (i >= 0) list.splice(i, 1);
    };
    // A thread that dies while idle (it should not) is simply not reused.
    pooled.worker.once('exit', drop);
    pooled.worker.on('error', drop);
    pooled.idleTimer = setTimeout(() => {
      drop();
      void pooled.worker.terminate();
    }, IDLE_WORKER_MS);
    pooled.idleTimer.unref();
    pooled.worker.unref();
  }

  /** Ends every idle thread (tests, shutdown). */
  async close(): Promise<void> {
    const all = [...this.idle.values()].flat();
    this.idle.clear();
    for (const p of all) clearTimeout(p.idleTimer);
    await Promise.all(all.map((p) => p.worker.terminate()));
  }
}

const pool = new ExtractionWorkerPool();

/** Ends the idle extraction threads kept for later documents (see {@link ExtractionWorkerPool}); running ones are not touched. */
export function closeExtractionWorkers(): Promise<void> {
  return pool.close();
}

/** How many extraction threads were started in this process, and how many are kept idle now. */
export function extractionWorkerStats(): { started: number; idle: number } {
  return { started: pool.started, idle: pool.idleCount };
}

/**
 * Extracts `filePath` (of canonical type `contentType`, a DOCUMENT_FORMATS row with `offThread: true`) in a worker
 * thread whose old-generation heap is capped at `ctx.maxHeapMb` MB: an idle one kept from an earlier document, or a
 * new one ({@link ExtractionWorkerPool}). Resolves with the
 * document; rejects with the extractor's `ExtractionError`, with `TOO_LARGE` ("needs more than N
 * MB of memory") when the thread runs out of heap, with the context's abort reason (time limit,
 * caller's signal) after terminating the thread, or with the extractor's other errors (file-system
 * errors keep their `code`). Progress messages are forwarded to `ctx.progress`.
 */
export function extractInWorker(ctx: ExtractionContext, contentType: string, filePath: string): Promise<ExtractedDocument> {
  if (ctx.signal.aborted) return Promise.reject(ctx.signal.reason);
  const job: WorkerJob = {
    contentType,
    filePath,
    options: {
      maxPages: ctx.maxPages,
      maxTextBytes: ctx.maxTextBytes,
      maxUnzippedBytes: ctx.maxUnzippedBytes,
      ocr: ctx.ocr,
      deferOcr: ctx.deferOcr,
      deferLayout: ctx.deferLayout,
    },
  };
  let fileBytes = 0;
  try {
    fileBytes = statSync(filePath).size;
  } catch {
    // A missing file: the worker reports it with its code (ENOENT), and stays reusable.
  }
  const pooled = pool.acquire(ctx.maxHeapMb);
  pooled.jobs++;
  const { worker } = pooled;
  return new Promise<ExtractedDocument>((resolve, reject) => {
    let settled = false;
    /** `reuse`: the thread answered and is healthy, so it may serve the next document; else it is ended. */
    const settle = (outcome: () => void, reuse: boolean) => {
      if (settled) return;
      settled = true;
      ctx.signal.removeEventListener('abort', onAbort);
      if (reuse) pool.release(pooled, ctx.maxHeapMb, fileBytes);
      else {
        worker.removeAllListeners('message');
        void worker.terminate();
      }
      outcome();
    };
    const onAbort = () => settle(() => reject(ctx.signal.reason), false);
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    worker.on('message', (m: WorkerMessage) => {
      if (m.kind === 'progress') ctx.progress(m.stage, m.done, m.total);
      else if (m.kind === 'result') settle(() => resolve(m.document), true);
      else settle(() => reject(deserialize(m.error)), true);
    });
    worker.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ERR_WORKER_OUT_OF_MEMORY') {
        settle(
          () =>
            reject(
              new ExtractionError(
                'TOO_LARGE',
                `The ${documentFormat(contentType)?.label ?? 'file'} needs more than ${ctx.maxHeapMb} MB of memory to read, more than the limit per document; ` +
                  'split it into smaller files and upload them separately.',
              ),
            ),
          false,
        );
      } else settle(() => reject(error), false);
    });
    worker.on('exit', (code) => settle(() => reject(new Error(`The extraction thread exited (code ${code}) before it answered`)), false));
    worker.postMessage(job);
  });
}

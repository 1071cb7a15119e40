/**
 * Off-thread extraction: the formats marked `offThread` in DOCUMENT_FORMATS (@kb/common), DOCX,
 * XLSX, PPTX and HTML, are parsed by JavaScript libraries (mammoth, exceljs, JSZip, cheerio) that
 * work synchronously for seconds on a large file. Run on the service's
 * event loop, they would stop its heartbeats (JetStream then redelivers the document to another
 * worker after the ack wait) and freeze every other job of the process. Each such extraction runs
 * in its own `worker_threads` Worker (worker.ts), one per document and ended after it, so that:
 * - the event loop stays free (heartbeats, progress events, other documents);
 * - its JavaScript heap is capped (`resourceLimits.maxOldGenerationSizeMb`, `ctx.maxHeapMb`): a file
 *   that needs more fails that document with `TOO_LARGE` instead of killing the process;
 * - the time limit and cancellation terminate the thread, which stops the parse mid-way (in-thread,
 *   library code could not be interrupted and ran on in the background).
 * A fresh thread per document (no pool) keeps one document's memory from outliving it and costs
 * about 0.1-0.3 s of module loading, small next to a document's processing.
 */
import { documentFormat, workerScript } from '@kb/common';
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

/**
 * Extracts `filePath` (of canonical type `contentType`, a DOCUMENT_FORMATS row with `offThread: true`) in a new
 * worker thread whose old-generation heap is capped at `ctx.maxHeapMb` MB. Resolves with the
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
  // From sources (Jest) the worker compiles its modules with TypeScript, in the capped heap too.
  const script = workerScript(__dirname, __filename, 'worker');
  return new Promise<ExtractedDocument>((resolve, reject) => {
    const worker = new Worker(script.filename, { eval: script.eval, workerData: job, resourceLimits: { maxOldGenerationSizeMb: ctx.maxHeapMb } });
    let settled = false;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      ctx.signal.removeEventListener('abort', onAbort);
      void worker.terminate();
      outcome();
    };
    const onAbort = () => settle(() => reject(ctx.signal.reason));
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    worker.on('message', (m: WorkerMessage) => {
      if (m.kind === 'progress') ctx.progress(m.stage, m.done, m.total);
      else if (m.kind === 'result') settle(() => resolve(m.document));
      else settle(() => reject(deserialize(m.error)));
    });
    worker.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ERR_WORKER_OUT_OF_MEMORY') {
        settle(() =>
          reject(
            new ExtractionError(
              'TOO_LARGE',
              `The ${documentFormat(contentType)?.label ?? 'file'} needs more than ${ctx.maxHeapMb} MB of memory to read, more than the limit per document; ` +
                'split it into smaller files and upload them separately.',
            ),
          ),
        );
      } else settle(() => reject(error));
    });
    worker.on('exit', (code) => settle(() => reject(new Error(`The extraction thread exited (code ${code}) before it answered`))));
  });
}

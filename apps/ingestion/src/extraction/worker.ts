/**
 * Entry point of an extraction worker thread (see off-thread.ts): extracts one file with the
 * in-thread extractor of its type and posts the result back. Messages to the parent:
 * `{ kind: 'progress', stage, done, total }`, then exactly one of `{ kind: 'result', document }` or
 * `{ kind: 'error', error: SerializedError }`. Time limits and cancellation are the parent's: it
 * terminates the thread.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { createContext, ExtractionContext } from './context';
import { extractDocx } from './docx';
import { extractHtml } from './html';
import { extractPptx } from './pptx';
import { ExtractedDocument, ExtractionError } from './types';
import { extractXlsx } from './xlsx';
import type { SerializedError, WorkerJob, WorkerMessage } from './off-thread';

const EXTRACTORS: Readonly<Record<string, (ctx: ExtractionContext, filePath: string) => Promise<ExtractedDocument>>> = {
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': extractDocx,
  'application/vnd.openxmlformats-officedocument.presentationml.presentation': extractPptx,
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': extractXlsx,
  'text/html': extractHtml,
};

function serialize(error: unknown): SerializedError {
  if (error instanceof ExtractionError) return { name: error.name, message: error.message, extractionCode: error.code };
  if (error instanceof Error) return { name: error.name, message: error.message, stack: error.stack, code: (error as NodeJS.ErrnoException).code };
  return { name: 'Error', message: String(error) };
}

async function run(job: WorkerJob): Promise<void> {
  const post = (m: WorkerMessage) => parentPort!.postMessage(m);
  // The parent owns the time limit (it terminates this thread): no timer here.
  const { ctx, dispose } = createContext({
    ...job.options,
    timeoutMs: 2 ** 31 - 1,
    onProgress: (stage, done, total) => post({ kind: 'progress', stage, done, total }),
  });
  try {
    const extractor = EXTRACTORS[job.contentType];
    if (!extractor) throw new Error(`no off-thread extractor for ${job.contentType}`);
    post({ kind: 'result', document: await extractor(ctx, job.filePath) });
  } catch (error) {
    post({ kind: 'error', error: serialize(error) });
  } finally {
    dispose();
  }
}

if (parentPort) void run(workerData as WorkerJob);

/**
 * Entry point of an extraction worker thread (see off-thread.ts): for each job the parent posts (one at a time; the
 * thread is kept for later documents), extracts the file with the extractor of its type (extractors.ts, the table
 * extractDocument uses too) and posts the result back. Messages to the parent, per job:
 * `{ kind: 'progress', stage, done, total }`, then exactly one of `{ kind: 'result', document }` or
 * `{ kind: 'error', error: SerializedError }`. Time limits and cancellation are the parent's: it
 * terminates the thread.
 */
import { parentPort } from 'node:worker_threads';
import { createContext } from './context';
import { extractorFor } from './extractors';
import { ExtractionError } from './types';
import type { SerializedError, WorkerJob, WorkerMessage } from './off-thread';

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
    const extractor = extractorFor(job.contentType);
    if (!extractor) throw new Error(`no off-thread extractor for ${job.contentType}`);
    post({ kind: 'result', document: await extractor(ctx, job.filePath) });
  } catch (error) {
    post({ kind: 'error', error: serialize(error) });
  } finally {
    dispose();
  }
}

parentPort?.on('message', (job: WorkerJob) => void run(job));

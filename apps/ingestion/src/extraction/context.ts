import { ExtractionError, ExtractionProgressListener, ExtractOptions } from './types';
import { DEFAULT_ZIP_LIMITS } from './zip-limits';

export const DEFAULT_TIMEOUT_MS = 300_000;
export const DEFAULT_MAX_PAGES = 2000;
/** Default text budget: 32 MiB keeps one document's chunks inside the 64 MiB gRPC message limit of the index. */
export const DEFAULT_MAX_TEXT_BYTES = 32 * 1024 * 1024;
/**
 * Default heap cap of one off-thread extraction (MB): the 50k-paragraph DOCX and 30 MB HTML of
 * off-thread.spec.ts need well under half of it.
 */
export const DEFAULT_MAX_HEAP_MB = 1024;

/**
 * Per-call state shared by the format extractors: one abort signal that fires on the caller's
 * signal or when the time budget runs out (its `reason` is the error to throw), the page limit
 * and whether OCR is allowed.
 */
export interface ExtractionContext {
  readonly signal: AbortSignal;
  readonly maxPages: number;
  readonly ocr: boolean;
  /** PDFs with some text pages: leave their image-only pages to a later OCR step (see `ExtractedDocument.deferredOcrPages`). */
  readonly deferOcr: boolean;
  /** PDFs with some text pages: leave the words' boxes to a later step (see `ExtractedDocument.layoutDeferred`). */
  readonly deferLayout: boolean;
  /** Largest amount of extracted text accepted, in bytes (UTF-8); beyond it `TOO_LARGE`. */
  readonly maxTextBytes: number;
  /** Largest declared uncompressed size of an Office (ZIP) package, in bytes. */
  readonly maxUnzippedBytes: number;
  /** Old-generation heap cap (MB) of the worker thread that extracts a DOCX/XLSX/PPTX/HTML file. */
  readonly maxHeapMb: number;
  /** Reports progress (a no-op when the caller gave no listener). */
  readonly progress: ExtractionProgressListener;
}

/**
 * Builds the context for one extraction and returns it with a `dispose` function that must be
 * called when the extraction ends (clears the timer and the listener on the caller's signal).
 * When the budget runs out, `signal.reason` is an `ExtractionError('TIMEOUT')`; when the caller
 * aborts, it is the caller's own reason.
 */
export function createContext(options: ExtractOptions = {}): { ctx: ExtractionContext; dispose: () => void } {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const controller = new AbortController();
  const timer = setTimeout(() => {
    controller.abort(
      new ExtractionError(
        'TIMEOUT',
        `Extracting the text took longer than ${Math.round(timeoutMs / 1000)} s and was stopped; ` +
          'try a smaller file (or split it), or ask an administrator to raise the time limit.',
      ),
    );
  }, timeoutMs);
  timer.unref?.();
  const external = options.signal;
  const onAbort = () => controller.abort(external?.reason);
  if (external) {
    if (external.aborted) onAbort();
    else external.addEventListener('abort', onAbort, { once: true });
  }
  return {
    ctx: {
      signal: controller.signal,
      maxPages: options.maxPages ?? DEFAULT_MAX_PAGES,
      ocr: options.ocr ?? true,
      deferOcr: options.deferOcr ?? false,
      deferLayout: options.deferLayout ?? false,
      maxTextBytes: options.maxTextBytes ?? DEFAULT_MAX_TEXT_BYTES,
      maxUnzippedBytes: options.maxUnzippedBytes ?? DEFAULT_ZIP_LIMITS.maxUncompressedBytes,
      maxHeapMb: options.maxHeapMb ?? DEFAULT_MAX_HEAP_MB,
      progress: options.onProgress ?? (() => undefined),
    },
    dispose: () => {
      clearTimeout(timer);
      external?.removeEventListener('abort', onAbort);
    },
  };
}

/** Throws the context's abort reason if it has been aborted (call between CPU-bound steps). */
export function checkAborted(ctx: ExtractionContext): void {
  if (ctx.signal.aborted) throw ctx.signal.reason;
}

/**
 * Resolves like `work`, unless the context is aborted first: then rejects with the abort reason.
 * The work itself keeps running in the background (library code cannot be cancelled), its
 * result is ignored.
 */
export function raceAbort<T>(ctx: ExtractionContext, work: Promise<T>): Promise<T> {
  if (ctx.signal.aborted) {
    work.catch(() => undefined);
    return Promise.reject(ctx.signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(ctx.signal.reason);
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (v) => {
        ctx.signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e) => {
        ctx.signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

/** Throws `TOO_LARGE` when `count` units (pages, sheets, slides, frames) exceed the limit. */
export function checkPageLimit(ctx: ExtractionContext, count: number, unit: string): void {
  if (count > ctx.maxPages) {
    throw new ExtractionError(
      'TOO_LARGE',
      `The file has ${count} ${unit}s, more than the limit of ${ctx.maxPages}; split it into smaller files and upload them separately.`,
    );
  }
}

/** `TOO_LARGE` error for a file whose text is bigger than `ctx.maxTextBytes`. */
export function textTooLarge(ctx: ExtractionContext, sizeBytes?: number): ExtractionError {
  const mb = (n: number) => (n >= 1024 * 1024 ? `${Math.round(n / (1024 * 1024))} MB` : `${Math.max(1, Math.round(n / 1024))} KB`);
  return new ExtractionError(
    'TOO_LARGE',
    `The file holds ${sizeBytes ? `about ${mb(sizeBytes)} of text` : 'more text than accepted'}, more than the limit of ${mb(ctx.maxTextBytes)} per document; ` +
      'split it into smaller files and upload them separately.',
  );
}

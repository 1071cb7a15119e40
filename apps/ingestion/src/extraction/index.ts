import { ACCEPTED_FORMATS_PHRASE, documentFormat, normalizeContentType } from '@kb/common';
/**
 * Document extraction: turns an uploaded file into structural blocks (headings, paragraphs,
 * lists, tables) with page numbers where the format has pages. One module per format; this file
 * dispatches by content type.
 */
import { stat } from 'node:fs/promises';
import { createContext, ExtractionContext, raceAbort, textTooLarge } from './context';
import { EXTRACTORS, extractorFor } from './extractors';
import { extractInWorker } from './off-thread';
import { extractPdfOcrPages, readPdfWordBoxes } from './pdf';
import { ExtractedBlock, ExtractedDocument, ExtractionError, ExtractOptions, type PageLayout, type PageWord } from './types';

export type {
  BlockKind,
  ExtractedBlock,
  ExtractedDocument,
  ExtractionErrorCode,
  ExtractOptions,
  ExtractionProgressListener,
  PageLayout,
  PageSize,
  PageWord,
} from './types';
export { ExtractionError } from './types';
export { closeExtractionWorkers } from './off-thread';
export { chunkWordBoxes } from './word-boxes';

/** The MIME types {@link extractDocument} accepts (canonical spelling). */
export const SUPPORTED_CONTENT_TYPES: readonly string[] = Object.freeze(Object.keys(EXTRACTORS));

/** Canonical MIME type: one definition for the upload check and extraction. */
export { normalizeContentType };

/**
 * Extracts the text of the file at `filePath`, of MIME type `contentType` (parameters such as
 * `; charset=` are ignored), into blocks in reading order.
 *
 * Returns `{ blocks, pageCount, title }`: blocks carry a 1-based `page` for paged formats (PDF
 * page, XLSX sheet, PPTX slide, image frame, TXT form-feed page) and `null` otherwise;
 * `pageCount` is null for page-less formats.
 *
 * Throws {@link ExtractionError} with a user-actionable message:
 * `UNSUPPORTED_TYPE` (type not supported, legacy Office format, or PDF tools missing),
 * `CORRUPT_FILE`, `ENCRYPTED` (password needed to open), `NO_TEXT`, `TIMEOUT`
 * (`options.timeoutMs`, default 300000 ms, exceeded; child processes are killed),
 * `TOO_LARGE` (more than `options.maxPages`, default 2000, pages/sheets/slides),
 * `OCR_UNAVAILABLE` (scanned content but tesseract/pdftoppm missing); the formats with `offThread`
 * in DOCUMENT_FORMATS (DOCX, XLSX, PPTX, HTML) are parsed in a worker thread (off-thread.ts) and give `TOO_LARGE` when it needs more than
 * `options.maxHeapMb` of heap.
 * When `options.signal` aborts, the signal's reason is thrown. File-system errors reading
 * `filePath` (e.g. ENOENT) are passed through unchanged.
 */
export async function extractDocument(filePath: string, contentType: string, options: ExtractOptions = {}): Promise<ExtractedDocument> {
  const type = normalizeContentType(contentType);
  const extractor = extractorFor(type);
  const format = documentFormat(type);
  if (!extractor || !format) {
    throw new ExtractionError('UNSUPPORTED_TYPE', `Files of type "${contentType}" cannot be processed; upload a ${ACCEPTED_FORMATS_PHRASE} file.`);
  }
  const { ctx, dispose } = createContext(options);
  try {
    if (ctx.signal.aborted) throw ctx.signal.reason;
    if (format.text) {
      // Text formats are read whole: refuse before reading when the file alone exceeds the budget.
      const { size } = await stat(filePath);
      if (size > ctx.maxTextBytes) throw textTooLarge(ctx, size);
    }
    // Library parsers that would hold the event loop for seconds on a large file run in a worker thread.
    if (format.offThread) return await extractInWorker(ctx, type, filePath);
    return await raceAbort(ctx, extractor(ctx, filePath));
  } finally {
    dispose();
  }
}

/**
 * Reads the word boxes of a PDF that {@link extractDocument} left out with `deferLayout` (its
 * `layoutDeferred`) into its `layout` (page sizes, and the words of pages OCRed since). Returns the
 * new layout; `layout` unchanged when poppler cannot read the boxes. Same options as
 * {@link extractDocument}; throws `TIMEOUT` or the caller's abort reason.
 */
export function readDeferredLayout(filePath: string, layout: readonly PageLayout[], options: ExtractOptions = {}): Promise<PageLayout[]> {
  return inContext(options, (ctx) => readPdfWordBoxes(ctx, filePath, layout));
}

/** Runs a deferred step with its own context (time limit, abort): the context's abort reason is thrown. */
async function inContext<T>(options: ExtractOptions, step: (ctx: ExtractionContext) => Promise<T>): Promise<T> {
  const { ctx, dispose } = createContext(options);
  try {
    if (ctx.signal.aborted) throw ctx.signal.reason;
    return await raceAbort(ctx, step(ctx));
  } finally {
    dispose();
  }
}

/**
 * OCRs pages of a PDF that {@link extractDocument} left out with `deferOcr` (its
 * `deferredOcrPages`), returning their blocks in page order with exact 1-based pages and the
 * words OCR read on each page (boxes in points, top-left origin). Same
 * options and errors as {@link extractDocument} (`OCR_UNAVAILABLE`, `TIMEOUT`, `CORRUPT_FILE`).
 */
export function extractDeferredOcrPages(
  filePath: string,
  pages: readonly number[],
  options: ExtractOptions = {},
): Promise<{ blocks: ExtractedBlock[]; words: Map<number, PageWord[]> }> {
  return inContext(options, (ctx) => extractPdfOcrPages(ctx, filePath, pages));
}

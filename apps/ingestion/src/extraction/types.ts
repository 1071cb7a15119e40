/** Kind of a structural block found in a document. */
export type BlockKind = 'heading' | 'paragraph' | 'table' | 'list';

/**
 * One structural block of extracted text, in reading order.
 *
 * - `text`: plain text. Tables: one line per row, cells joined by `' | '`; when `tableHeader` is
 *   set, `text` starts with that header line.
 * - `page`: 1-based page (PDF page, XLSX sheet index, PPTX slide, TIFF frame); `null` for formats
 *   without pages (DOCX, HTML, Markdown, TXT without form feeds, CSV, JSON).
 * - `level`: heading level 1..6, only for `kind === 'heading'`.
 * - `tableHeader`: only for `kind === 'table'`: the header row line, repeated by the chunker at
 *   the start of every chunk of the table.
 */
export interface ExtractedBlock {
  kind: BlockKind;
  text: string;
  page: number | null;
  level?: number;
  tableHeader?: string;
}

/**
 * The extracted text of one file: blocks in reading order, the number of pages (PDF pages,
 * XLSX sheets, PPTX slides, image frames; `null` for page-less formats) and a title when the
 * format carries one (PDF metadata, HTML `<title>`, first heading, ...).
 */
export interface ExtractedDocument {
  blocks: ExtractedBlock[];
  pageCount: number | null;
  title: string | null;
  /**
   * 1-based pages without a text layer whose OCR was deferred (`ExtractOptions.deferOcr`): the
   * document is searchable on its text pages first, and an enrichment step OCRs these later.
   */
  deferredOcrPages?: number[];
  /**
   * PDFs: every page's size in points and its words with their boxes (text layer from
   * `pdftotext -bbox-layout`, OCRed pages from tesseract), to place quotes on the page; absent for
   * other formats or when poppler could not read the layout. See word-boxes.ts.
   */
  layout?: PageLayout[];
  /**
   * True when the text layer's word boxes were not read (`ExtractOptions.deferLayout`): `layout`
   * then has every page's size (from `pdfinfo`) and no words yet; an enrichment step reads them
   * with {@link ExtractOptions} and `readDeferredLayout` (extraction/index.ts).
   */
  layoutDeferred?: boolean;
}

/** Why a file could not be extracted; each code has a message a user can act on. */
export type ExtractionErrorCode = 'UNSUPPORTED_TYPE' | 'CORRUPT_FILE' | 'ENCRYPTED' | 'NO_TEXT' | 'TIMEOUT' | 'TOO_LARGE' | 'OCR_UNAVAILABLE';

/**
 * The one error type of the extraction library. `code` is machine-readable; `message` tells the
 * user what to do (e.g. "The PDF is password-protected; upload a copy without a password.").
 */
export class ExtractionError extends Error {
  constructor(
    public readonly code: ExtractionErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'ExtractionError';
  }
}

/** Progress callback of an extraction (see `ExtractOptions.onProgress`). */
export type ExtractionProgressListener = (stage: 'extracting' | 'ocr', pagesDone: number | null, pagesTotal: number | null) => void;

/**
 * Options of {@link extractDocument}.
 * - `timeoutMs`: wall-clock budget for the whole extraction in milliseconds (default 300000);
 *   child processes are killed when it runs out and `TIMEOUT` is thrown.
 * - `maxPages`: largest accepted number of pages/sheets/slides (default 2000), else `TOO_LARGE`.
 * - `signal`: aborts the extraction (child processes are killed); the signal's reason is thrown.
 * - `ocr`: run OCR on images and on PDF pages without a text layer (default true).
 * - `deferOcr`: in a PDF that has text pages, do not OCR its image-only pages now but list them in
 *   `deferredOcrPages` (default false). A PDF with no text page at all is OCRed at once.
 * - `deferLayout`: in a PDF that has text pages, do not read the words' boxes now (the
 *   `pdftotext -bbox-layout` pass, as long again as the text itself) but set `layoutDeferred`, with
 *   the page sizes in `layout` (default false). A PDF with no text page reads them at once.
 * - `maxTextBytes`: largest extracted text in bytes (default 32 MiB), else `TOO_LARGE`.
 * - `maxUnzippedBytes`: largest declared uncompressed size of a DOCX/XLSX/PPTX package (default
 *   1 GiB), else `TOO_LARGE` before anything is inflated (zip bombs; see zip-limits.ts).
 * - `maxHeapMb`: heap cap in MB of the worker thread that parses a DOCX/XLSX/PPTX/HTML file
 *   (default 1024), else `TOO_LARGE` ("needs more than N MB of memory"); see off-thread.ts.
 */
export interface ExtractOptions {
  /**
   * Called as extraction advances: `stage` `extracting` (pages read of a paged format) or `ocr`
   * (pages OCRed of the pages being OCRed); counts null where not known. Must not throw.
   */
  onProgress?: ExtractionProgressListener;
  timeoutMs?: number;
  maxPages?: number;
  signal?: AbortSignal;
  ocr?: boolean;
  deferOcr?: boolean;
  deferLayout?: boolean;
  maxTextBytes?: number;
  maxUnzippedBytes?: number;
  maxHeapMb?: number;
}

/** One word of a page as the PDF tools read it: its text and its box in points, top-left origin. */
export interface PageWord {
  text: string;
  x0: number;
  y0: number;
  x1: number;
  y1: number;
}

/**
 * One page's size and words in reading order. `page` is 1-based; `width`/`height` in PDF points
 * (1/72 inch) of the page as displayed (rotation applied by poppler).
 */
export interface PageLayout {
  page: number;
  width: number;
  height: number;
  words: PageWord[];
}

/** The size of one page in points (what `GET /api/v2/documents/{id}/pages/{n}` returns). */
export interface PageSize {
  page: number;
  width: number;
  height: number;
}

/**
 * PDF extraction with poppler: `pdfinfo` for page count, title and encryption, one `pdftotext`
 * run over the whole file (pages separated by form feeds, so page numbers are exact), OCR for
 * pages without a text layer.
 */
import { checkAborted, checkPageLimit, ExtractionContext, textTooLarge } from './context';
import { pageTextToBlocks, stripRunningLines } from './layout';
import { OcrPage, ocrPdfPages } from './ocr';
import { ProcessResult, runProcess, ToolMissingError } from './process';
import { ExtractedBlock, ExtractedDocument, ExtractionError, type PageLayout, type PageWord } from './types';
import { readPdfLayout, roundPoints } from './word-boxes';

/** The `-bbox-layout` output is about this many times the size of the plain text; bigger is skipped. */
const LAYOUT_BYTES_PER_TEXT_BYTE = 16;

/** A page with fewer non-space characters than this counts as having no text layer. */
const MIN_PAGE_CHARS = 10;

const ENCRYPTED_MESSAGE = 'The PDF is password-protected; upload a copy without a password.';
const CORRUPT_MESSAGE = 'The PDF could not be read; it may be damaged or not a PDF. Open it in a PDF viewer, save a new copy and upload that.';

interface PdfInfo {
  pages: number;
  title: string | null;
  /** Each listed page's size in points (width and height of its MediaBox, as `pdftotext -bbox-layout` gives them); empty without `ctx.deferLayout`. */
  sizes: Map<number, { width: number; height: number }>;
}

function popplerMissing(): ExtractionError {
  return new ExtractionError(
    'UNSUPPORTED_TYPE',
    'PDF files cannot be processed on this server because poppler-utils (pdftotext, pdfinfo) is not installed; ask the administrator to install it.',
  );
}

async function runPoppler(ctx: ExtractionContext, cmd: string, args: string[]): Promise<ProcessResult> {
  try {
    return await runProcess(ctx, cmd, args);
  } catch (e) {
    if (e instanceof ToolMissingError) throw popplerMissing();
    throw e;
  }
}

function failureFromStderr(stderr: string): ExtractionError {
  if (/incorrect password|encrypted/i.test(stderr)) return new ExtractionError('ENCRYPTED', ENCRYPTED_MESSAGE);
  return new ExtractionError('CORRUPT_FILE', CORRUPT_MESSAGE);
}

/**
 * Reads page count and title with `pdfinfo`, and with `ctx.deferLayout` (their only use) the sizes
 * of the first `ctx.maxPages` pages in the same run (`-box`). A PDF that needs a password to open -> `ENCRYPTED`; one that poppler cannot
 * open -> `CORRUPT_FILE`. PDFs that are encrypted with an owner password only (they open without a
 * password) are read normally.
 */
export async function readPdfInfo(ctx: ExtractionContext, filePath: string): Promise<PdfInfo> {
  const boxes = ctx.deferLayout ? ['-box', '-f', '1', '-l', String(Math.max(1, ctx.maxPages))] : [];
  const r = await runPoppler(ctx, 'pdfinfo', ['-enc', 'UTF-8', ...boxes, filePath]);
  const out = r.stdout.toString('utf8');
  if (r.code !== 0) throw failureFromStderr(r.stderr);
  const pages = /^Pages:\s+(\d+)/m.exec(out);
  if (!pages) throw new ExtractionError('CORRUPT_FILE', CORRUPT_MESSAGE);
  const title = /^Title:\s+(.*)$/m.exec(out)?.[1]?.trim() ?? '';
  const sizes = new Map<number, { width: number; height: number }>();
  // "Page    3 MediaBox:     0.00     0.00   612.00   792.00" (x1 y1 x2 y2, points)
  for (const m of out.matchAll(/^Page\s+(\d+)\s+MediaBox:\s+([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)/gm)) {
    const [x1, y1, x2, y2] = [m[2], m[3], m[4], m[5]].map(Number);
    sizes.set(Number(m[1]), { width: roundPoints(Math.abs(x2 - x1)), height: roundPoints(Math.abs(y2 - y1)) });
  }
  return { pages: Number(pages[1]), title: cleanTitle(title), sizes };
}

/**
 * Every page's size with no words yet (the layout of a document whose word boxes are deferred),
 * or null when `pdfinfo` did not list the size of every page.
 */
function sizesOnlyLayout(info: PdfInfo): PageLayout[] | null {
  const layout: PageLayout[] = [];
  for (let page = 1; page <= info.pages; page++) {
    const size = info.sizes.get(page);
    if (!size) return null;
    layout.push({ page, width: size.width, height: size.height, words: [] });
  }
  return layout;
}

/** Drops titles that are file names or tool prefixes ("Microsoft Word - report.docx"). */
function cleanTitle(title: string): string | null {
  const t = title.replace(/^Microsoft (?:Word|PowerPoint|Excel) - /i, '').trim();
  if (!t || /^untitled$/i.test(t) || /\.(?:docx?|pptx?|xlsx?|pdf|tex|dvi|indd|qxd)$/i.test(t)) return null;
  return t;
}

/** Pages that contain at least one image, from `pdfimages -list` (null when pdfimages is missing). */
async function pagesWithImages(ctx: ExtractionContext, filePath: string): Promise<Set<number> | null> {
  let r: ProcessResult;
  try {
    r = await runProcess(ctx, 'pdfimages', ['-list', filePath]);
  } catch (e) {
    if (e instanceof ToolMissingError) return null;
    throw e;
  }
  if (r.code !== 0) return null;
  const pages = new Set<number>();
  for (const line of r.stdout.toString('utf8').split('\n')) {
    const m = /^\s*(\d+)\s+\d+\s+(?:image|mask|smask|stencil)\b/.exec(line);
    if (m) pages.add(Number(m[1]));
  }
  return pages;
}

function countNonSpace(text: string): number {
  return text.replace(/\s+/g, '').length;
}

/**
 * Extracts a PDF into blocks with 1-based page numbers.
 *
 * Errors: `ENCRYPTED` (needs a password), `CORRUPT_FILE` (unreadable), `TOO_LARGE` (more pages
 * than `ctx.maxPages`), `NO_TEXT` (no text layer and OCR disabled or without result),
 * `OCR_UNAVAILABLE` (pages need OCR but tesseract/pdftoppm are missing), `UNSUPPORTED_TYPE`
 * (poppler not installed), the abort reason on timeout/abort.
 */
export async function extractPdf(ctx: ExtractionContext, filePath: string): Promise<ExtractedDocument> {
  const info = await readPdfInfo(ctx, filePath);
  checkPageLimit(ctx, info.pages, 'page');
  ctx.progress('extracting', 0, info.pages);

  let r: ProcessResult;
  try {
    r = await runProcess(ctx, 'pdftotext', ['-enc', 'UTF-8', '-eol', 'unix', filePath, '-'], { maxOutputBytes: ctx.maxTextBytes });
  } catch (e) {
    if (e instanceof ToolMissingError) throw popplerMissing();
    // A "PDF bomb": small file, compressed content streams that expand to huge amounts of text.
    if (e instanceof ExtractionError && e.code === 'TOO_LARGE') throw textTooLarge(ctx);
    throw e;
  }
  const raw = r.stdout.toString('utf8');
  if (r.code !== 0 && raw.trim() === '') throw failureFromStderr(r.stderr);
  checkAborted(ctx);

  ctx.progress('extracting', info.pages, info.pages);
  const segments = raw.split('\f');
  const pageTexts = Array.from({ length: info.pages }, (_, i) => segments[i] ?? '');
  const texts = stripRunningLines(pageTexts);

  const empty = texts.map((t, i) => (countNonSpace(t) < MIN_PAGE_CHARS ? i + 1 : 0)).filter((p) => p > 0);
  let scannedPages: number[] = [];
  if (empty.length > 0) {
    const withImages = await pagesWithImages(ctx, filePath);
    scannedPages = withImages ? empty.filter((p) => withImages.has(p)) : empty;
  }
  let deferredOcrPages: number[] | undefined;
  const hasTextPage = texts.some((t) => countNonSpace(t) >= MIN_PAGE_CHARS);
  if (ctx.ocr && ctx.deferOcr && scannedPages.length > 0 && hasTextPage) {
    deferredOcrPages = scannedPages;
  }
  // The words' boxes only place quotes on the page: a PDF with text is searchable without them.
  const sizesOnly = ctx.deferLayout && hasTextPage ? sizesOnlyLayout(info) : null;
  const layout = sizesOnly ?? (await readDocumentLayout(ctx, filePath));
  if (!deferredOcrPages && ctx.ocr && scannedPages.length > 0) {
    const ocrPages = await ocrPdfPages(ctx, filePath, scannedPages);
    for (const [page, read] of ocrPages) texts[page - 1] = read.text;
    if (layout) withOcrWords(layout, ocrPages);
  }
  checkAborted(ctx);

  const blocks: ExtractedBlock[] = [];
  texts.forEach((text, i) => blocks.push(...pageTextToBlocks(text, i + 1)));
  if (blocks.length === 0) {
    if (scannedPages.length > 0 && !ctx.ocr) {
      throw new ExtractionError(
        'NO_TEXT',
        'The PDF has no text layer; it seems to be scanned images. Enable OCR for this upload, or upload a PDF with selectable text.',
      );
    }
    if (scannedPages.length > 0) {
      throw new ExtractionError(
        'NO_TEXT',
        'The PDF seems to be scanned images and OCR recognised no text in them; upload a clearer scan (300 dpi or more) or a PDF with selectable text.',
      );
    }
    throw new ExtractionError('NO_TEXT', 'The PDF contains no text (its pages are empty or drawn as shapes); upload a PDF with selectable text.');
  }
  const firstHeading = blocks.find((b) => b.kind === 'heading')?.text ?? null;
  return {
    blocks,
    pageCount: info.pages,
    title: info.title ?? firstHeading,
    ...(deferredOcrPages ? { deferredOcrPages } : {}),
    ...(layout ? { layout } : {}),
    ...(sizesOnly ? { layoutDeferred: true } : {}),
  };
}

/** The whole document's word boxes and page sizes (`pdftotext -bbox-layout`), null as {@link readPdfLayout}. */
function readDocumentLayout(ctx: ExtractionContext, filePath: string): Promise<PageLayout[] | null> {
  return readPdfLayout(ctx, filePath, Math.max(1, ctx.maxTextBytes) * LAYOUT_BYTES_PER_TEXT_BYTE);
}

/**
 * Reads the word boxes that {@link extractPdf} left out with `deferLayout` and puts them into
 * `layout` (the sizes-only layout of that extraction, whose OCRed pages may already hold
 * tesseract's words: a page keeps its words when the text layer has none). Returns the new
 * layout, or `layout` unchanged when poppler cannot read the boxes (quotes then get no boxes,
 * nothing fails). Errors: the abort reason on timeout/abort.
 */
export async function readPdfWordBoxes(ctx: ExtractionContext, filePath: string, layout: readonly PageLayout[]): Promise<PageLayout[]> {
  const read = await readDocumentLayout(ctx, filePath);
  if (!read) return [...layout];
  const byPage = new Map(read.map((p) => [p.page, p]));
  return layout.map((p) => {
    const q = byPage.get(p.page);
    if (!q) return p;
    return { page: p.page, width: q.width, height: q.height, words: q.words.length > 0 || p.words.length === 0 ? q.words : p.words };
  });
}

/** Puts the words OCR read on a page into its layout (a scanned page has no text-layer words). */
function withOcrWords(layout: PageLayout[], ocrPages: ReadonlyMap<number, OcrPage>): void {
  for (const [page, read] of ocrPages) {
    const p = layout[page - 1];
    if (p) p.words = read.words;
  }
}

/**
 * OCRs the given 1-based pages of a PDF (pages whose OCR was deferred by {@link extractPdf}) and
 * returns their blocks, in page order, with exact page numbers, and the words OCR read per page
 * (boxes in points, top-left origin). Errors as {@link ocrPdfPages}.
 */
export async function extractPdfOcrPages(
  ctx: ExtractionContext,
  filePath: string,
  pages: readonly number[],
): Promise<{ blocks: ExtractedBlock[]; words: Map<number, PageWord[]> }> {
  const read = await ocrPdfPages(ctx, filePath, pages);
  const blocks: ExtractedBlock[] = [];
  for (const page of [...pages].sort((a, b) => a - b)) blocks.push(...pageTextToBlocks(read.get(page)?.text ?? '', page));
  return { blocks, words: new Map([...read].map(([page, r]) => [page, r.words])) };
}

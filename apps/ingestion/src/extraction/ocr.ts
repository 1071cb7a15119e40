/**
 * OCR with tesseract: image files directly, PDF pages after rasterising them with pdftoppm.
 * Page segmentation mode 1 (automatic with orientation and script detection) reads pages rotated
 * by 90/180/270 degrees. Tesseract runs single-threaded (OMP_THREAD_LIMIT=1, faster in parallel)
 * with at most one process per CPU.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ExtractionContext } from './context';
import { ProcessResult, runProcess, ToolMissingError } from './process';
import { ExtractionError, type PageWord } from './types';
import { parseTesseractTsv } from './word-boxes';

/** What OCR read on one PDF page: its text and its words with boxes in points (top-left origin). */
export interface OcrPage {
  text: string;
  words: PageWord[];
}

/** Rasterisation resolution for OCR, dots per inch. */
export const OCR_DPI = 300;
/** Largest raster handed to tesseract, in pixels; bigger pages are rendered at a lower resolution. */
export const MAX_OCR_PIXELS = 50_000_000;
/** Tesseract language(s). */
const OCR_LANG = 'eng';

function ocrUnavailable(tool: string): ExtractionError {
  const pkg = tool === 'tesseract' ? 'tesseract-ocr (with tesseract-ocr-eng)' : 'poppler-utils';
  return new ExtractionError(
    'OCR_UNAVAILABLE',
    `This file has scanned pages without a text layer, and OCR is not available on the server (${tool} is missing). ` +
      `Ask the administrator to install ${pkg}, or upload a PDF with selectable text.`,
  );
}

/**
 * Runs an OCR tool (`tesseract`, `pdftoppm`) like {@link runProcess}, with `OMP_THREAD_LIMIT=1` for tesseract
 * (one thread per process: pages run in parallel instead).
 * @throws ExtractionError `OCR_UNAVAILABLE` (naming the package to install) when the tool is not installed; the
 *   context's abort reason on timeout or abort
 */
async function runOcrTool(ctx: ExtractionContext, tool: 'tesseract' | 'pdftoppm', args: string[]): Promise<ProcessResult> {
  try {
    return await runProcess(ctx, tool, args, tool === 'tesseract' ? { env: { ...process.env, OMP_THREAD_LIMIT: '1' } } : undefined);
  } catch (e) {
    if (e instanceof ToolMissingError) throw ocrUnavailable(tool);
    throw e;
  }
}

/** Runs `fn` over `items` with at most `limit` calls in flight; results keep the input order. */
export async function mapWithConcurrency<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  let failed = false;
  const worker = async () => {
    while (!failed && next < items.length) {
      const i = next++;
      try {
        results[i] = await fn(items[i], i);
      } catch (e) {
        failed = true;
        throw e;
      }
    }
  };
  const workers = Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker);
  const settled = await Promise.allSettled(workers);
  const rejection = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (rejection) throw rejection.reason;
  return results;
}

/** Concurrency for OCR processes: one per CPU. */
export function ocrConcurrency(): number {
  return Math.max(1, cpus().length);
}

/**
 * Recognises the text of one image file (PNG, JPEG, TIFF; multi-frame TIFFs give several pages).
 * Returns one string per page/frame (tesseract separates frames with form feeds).
 * Throws `OCR_UNAVAILABLE` when tesseract is missing, `CORRUPT_FILE` when it cannot read the image,
 * and the context's abort reason on timeout/abort.
 */
export async function ocrImage(ctx: ExtractionContext, imagePath: string): Promise<string[]> {
  const result = await runOcrTool(ctx, 'tesseract', [imagePath, 'stdout', '-l', OCR_LANG, '--psm', '1']);
  if (result.code !== 0) {
    throw new ExtractionError(
      'CORRUPT_FILE',
      'The image could not be read (it may be damaged or in an unusual encoding); export it again as PNG or JPEG and upload that.',
    );
  }
  const pages = result.stdout.toString('utf8').split('\f');
  if (pages.length > 1 && pages[pages.length - 1].trim() === '') pages.pop();
  return pages;
}

/** PATH values under which `tesseract --version` ran, so the check runs once per PATH. */
const tesseractFound = new Set<string>();

/**
 * Fails fast with `OCR_UNAVAILABLE` when tesseract is not installed, before pages are rasterised.
 */
export async function ensureTesseract(ctx: ExtractionContext): Promise<void> {
  const key = process.env.PATH ?? '';
  if (tesseractFound.has(key)) return;
  await runOcrTool(ctx, 'tesseract', ['--version']);
  tesseractFound.add(key);
}

/** Page sizes in points, from `pdfinfo -f first -l last` ("Page    3 size: 612 x 792 pts"). */
async function pageSizes(ctx: ExtractionContext, pdfPath: string, first: number, last: number): Promise<Map<number, [number, number]>> {
  const sizes = new Map<number, [number, number]>();
  try {
    const r = await runProcess(ctx, 'pdfinfo', ['-f', String(first), '-l', String(last), pdfPath]);
    const re = /^Page\s+(\d+)\s+size:\s+([\d.]+)\s+x\s+([\d.]+)/gm;
    const out = r.stdout.toString('utf8');
    for (let m = re.exec(out); m; m = re.exec(out)) sizes.set(Number(m[1]), [Number(m[2]), Number(m[3])]);
  } catch (e) {
    if (!(e instanceof ToolMissingError)) throw e;
  }
  return sizes;
}

/** Resolution that keeps a page of `w` x `h` points under {@link MAX_OCR_PIXELS}, at most {@link OCR_DPI}. */
export function dpiForPage(size: [number, number] | undefined): number {
  if (!size) return OCR_DPI;
  const areaInches = (size[0] / 72) * (size[1] / 72);
  if (areaInches <= 0) return OCR_DPI;
  return Math.max(50, Math.min(OCR_DPI, Math.floor(Math.sqrt(MAX_OCR_PIXELS / areaInches))));
}

/**
 * OCRs the given 1-based pages of a PDF: each page is rendered to a grayscale PNG with
 * `pdftoppm -r 300` in a private temporary directory (removed afterwards) and read by tesseract,
 * which writes the text and its word boxes (TSV, pixels at the rendering resolution, converted to
 * points) in one run. Returns a map page -> recognised text and words. Throws `OCR_UNAVAILABLE`
 * when pdftoppm or tesseract is missing, `CORRUPT_FILE` when a page cannot be rendered or read,
 * and the abort reason on timeout.
 */
export async function ocrPdfPages(ctx: ExtractionContext, pdfPath: string, pages: readonly number[]): Promise<Map<number, OcrPage>> {
  const texts = new Map<number, OcrPage>();
  if (pages.length === 0) return texts;
  await ensureTesseract(ctx);
  const sizes = await pageSizes(ctx, pdfPath, Math.min(...pages), Math.max(...pages));
  const dir = await mkdtemp(join(tmpdir(), 'kb-ocr-'));
  let done = 0;
  ctx.progress('ocr', 0, pages.length);
  try {
    await mapWithConcurrency(pages, ocrConcurrency(), async (page) => {
      const prefix = join(dir, `p${page}`);
      const dpi = dpiForPage(sizes.get(page));
      const raster = await runOcrTool(ctx, 'pdftoppm', [
        '-r',
        String(dpi),
        '-gray',
        '-png',
        '-f',
        String(page),
        '-l',
        String(page),
        '-singlefile',
        pdfPath,
        prefix,
      ]);
      if (raster.code !== 0) {
        throw new ExtractionError(
          'CORRUPT_FILE',
          `Page ${page} of the PDF could not be rendered for OCR; the file may be damaged. Re-save or re-scan it and upload again.`,
        );
      }
      const imagePath = `${prefix}.png`;
      try {
        texts.set(page, await ocrPageImage(ctx, imagePath, prefix, dpi));
        ctx.progress('ocr', ++done, pages.length);
      } finally {
        await rm(imagePath, { force: true });
      }
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return texts;
}

/**
 * Runs tesseract once on a rendered page, writing `<outBase>.txt` (the text) and `<outBase>.tsv`
 * (word boxes in pixels at `dpi`). Throws `OCR_UNAVAILABLE` when tesseract is missing, `CORRUPT_FILE`
 * when it cannot read the image.
 */
async function ocrPageImage(ctx: ExtractionContext, imagePath: string, outBase: string, dpi: number): Promise<OcrPage> {
  const result = await runOcrTool(ctx, 'tesseract', [imagePath, outBase, '-l', OCR_LANG, '--psm', '1', 'txt', 'tsv']);
  if (result.code !== 0) {
    throw new ExtractionError('CORRUPT_FILE', 'A scanned page could not be read by OCR; re-scan it (300 dpi or more) and upload again.');
  }
  const [text, tsv] = await Promise.all([readFile(`${outBase}.txt`, 'utf8'), readFile(`${outBase}.tsv`, 'utf8').catch(() => '')]);
  return { text: text.split('\f').join('\n\n'), words: parseTesseractTsv(tsv, dpi) };
}

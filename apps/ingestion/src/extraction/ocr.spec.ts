import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createContext } from './context';
import { extractDocument, ExtractionError } from './index';
import { dpiForPage, mapWithConcurrency, ocrPdfPages } from './ocr';
import { corpus, hasTool, whichTool, wordOverlap } from './testing/corpus';
import { useTempDir } from './testing/temp-dir';

const ocrTools = hasTool('tesseract') && hasTool('pdftoppm');
const withOcr = ocrTools ? it : it.skip;

function ocrTempDirs(): string[] {
  return readdirSync(tmpdir()).filter((n) => n.startsWith('kb-ocr-'));
}

describe('OCR (tesseract)', () => {
  const tmp = useTempDir('kb-ocr-spec-');

  withOcr(
    'reads the scanned Linn brochure with 90%+ word overlap against the ground truth, and cleans its temp files',
    async () => {
      const before = new Set(ocrTempDirs());
      const started = Date.now();
      const doc = await extractDocument(corpus('pdf_scanned/ocrmypdf_linn.pdf'), 'application/pdf');
      const elapsed = Date.now() - started;
      const text = doc.blocks.map((b) => b.text).join('\n');
      const overlap = wordOverlap(readFileSync(corpus('pdf_scanned/ocrmypdf_linn.groundtruth.txt'), 'utf8'), text);

      console.log(`OCR ocrmypdf_linn.pdf (1 page): ${elapsed} ms, word overlap with ground truth ${(overlap * 100).toFixed(1)}%`);
      expect(overlap).toBeGreaterThanOrEqual(0.9);
      expect(doc.pageCount).toBe(1);
      expect(doc.blocks.every((b) => b.page === 1)).toBe(true);
      expect(text).toContain('The LinnSequencer');
      expect(ocrTempDirs().filter((d) => !before.has(d))).toEqual([]);
    },
    60_000,
  );

  withOcr(
    'reads an image file, here a page scanned upside down (page 3 of ocrmypdf_cardinal.pdf as PNG)',
    async () => {
      const png = tmp('cardinal-180');
      execFileSync('pdftoppm', ['-r', '150', '-gray', '-png', '-f', '3', '-l', '3', '-singlefile', corpus('pdf_scanned/ocrmypdf_cardinal.pdf'), png]);
      const doc = await extractDocument(`${png}.png`, 'image/png');
      const text = doc.blocks.map((b) => b.text).join('\n');
      expect(text).toContain('LinnSequencer');
      expect(wordOverlap(readFileSync(corpus('pdf_scanned/ocrmypdf_linn.groundtruth.txt'), 'utf8'), text)).toBeGreaterThanOrEqual(0.85);
      expect(doc.pageCount).toBe(1);
    },
    60_000,
  );

  it('fails with OCR_UNAVAILABLE, saying to install tesseract-ocr, when tesseract is not on PATH', async () => {
    const bin = tmp('bin-without-tesseract');
    mkdirSync(bin, { recursive: true });
    for (const tool of ['pdfinfo', 'pdftotext', 'pdftoppm', 'pdfimages']) {
      const real = whichTool(tool);
      if (real) symlinkSync(real, path.join(bin, tool));
    }
    const savedPath = process.env.PATH;
    process.env.PATH = bin;
    try {
      const error = await extractDocument(corpus('pdf_scanned/ocrmypdf_linn.pdf'), 'application/pdf').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ExtractionError);
      expect((error as ExtractionError).code).toBe('OCR_UNAVAILABLE');
      expect((error as ExtractionError).message).toMatch(/install tesseract-ocr/);
      const imageError = await extractDocument(corpus('pdf_scanned/ocrmypdf_linn.pdf'), 'image/png').catch((e: unknown) => e);
      expect((imageError as ExtractionError).code).toBe('OCR_UNAVAILABLE');
    } finally {
      process.env.PATH = savedPath;
    }
  });

  it('renders huge pages at a lower resolution (the 9000x9000 px page of ocrmypdf_multipage.pdf is 2160 pt square)', () => {
    expect(dpiForPage([612, 792])).toBe(300);
    const dpi = dpiForPage([2160, 2160]);
    expect(dpi).toBeLessThan(300);
    expect(((2160 / 72) * dpi) ** 2).toBeLessThanOrEqual(50_000_000);
  });

  it('never runs more tasks at once than the concurrency limit', async () => {
    let running = 0;
    let peak = 0;
    const results = await mapWithConcurrency([1, 2, 3, 4, 5, 6, 7], 2, async (n) => {
      running++;
      peak = Math.max(peak, running);
      await new Promise((r) => setTimeout(r, 5));
      running--;
      return n * 2;
    });
    expect(results).toEqual([2, 4, 6, 8, 10, 12, 14]);
    expect(peak).toBe(2);
  });

  it('kills a running OCR when the context is aborted', async () => {
    const { ctx, dispose } = createContext({ timeoutMs: 50 });
    try {
      const error = await ocrPdfPages(ctx, corpus('pdf_scanned/ocrmypdf_linn.pdf'), [1]).catch((e: unknown) => e);
      expect((error as ExtractionError).code).toBe('TIMEOUT');
    } finally {
      dispose();
    }
  });
});

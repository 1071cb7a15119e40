import { boxesForSpan } from '@kb/knowledge';
import { execFileSync } from 'node:child_process';
import { chunkDocument } from '../chunking';
import { extractDocument, readDeferredLayout } from './index';
import { corpus, hasTool } from './testing/corpus';
import type { PageLayout } from './types';
import { alignChunkWords, chunkWordBoxes, parseBboxLayout, parseTesseractTsv } from './word-boxes';

const POAM = 'pdf/fedramp_guide_poam_rev5.pdf';

/** The words of one page as `pdftotext -bbox-layout` reads them, straight from poppler. */
function bboxPage(file: string, page: number): PageLayout {
  const xhtml = execFileSync('pdftotext', ['-bbox-layout', '-enc', 'UTF-8', '-f', String(page), '-l', String(page), file, '-'], { encoding: 'utf8' });
  return { ...parseBboxLayout(xhtml)[0], page };
}

const inside = (w: { x0: number; y0: number; x1: number; y1: number }, b: { x0: number; y0: number; x1: number; y1: number }) =>
  w.x0 >= b.x0 - 0.01 && w.x1 <= b.x1 + 0.01 && w.y0 >= b.y0 - 0.01 && w.y1 <= b.y1 + 0.01;

(hasTool('pdftotext') ? describe : describe.skip)('word boxes of PDF pages', () => {
  it('parses pdftotext -bbox-layout: page size in points and words with top-left boxes, XML entities decoded', () => {
    const page = bboxPage(corpus(POAM), 1);
    expect(page).toMatchObject({ page: 1, width: 612, height: 792 });
    expect(page.words.slice(0, 3).map((w) => w.text)).toEqual(['Guide', 'to', 'OSCAL-Based']);
    expect(page.words.map((w) => w.text)).toContain('(POA&M)');
    for (const w of page.words) {
      expect(w.x0).toBeLessThan(w.x1);
      expect(w.y0).toBeLessThan(w.y1);
      expect(w.x1).toBeLessThanOrEqual(612);
      expect(w.y1).toBeLessThanOrEqual(792);
    }
  });

  it('aligns the chunk text of a real PDF to its words: every boxed token is the word poppler saw there', async () => {
    const file = corpus(POAM);
    const doc = await extractDocument(file, 'application/pdf', { ocr: false });
    expect(doc.layout?.length).toBe(doc.pageCount);
    const chunks = chunkDocument(doc);
    const boxes = chunkWordBoxes(chunks, doc.layout);
    let tokens = 0;
    let boxed = 0;
    chunks.forEach((c, i) => {
      tokens += (c.text.match(/\S+/g) ?? []).length;
      boxed += new Set(boxes[i].map((b) => b.start)).size;
      for (const b of boxes[i]) {
        const page = doc.layout![b.page - 1];
        // The box is one of poppler's words of that page, and its text is (part of) the token at those offsets.
        const word = page.words.find((w) => w.x0 === b.x0 && w.y0 === b.y0 && w.x1 === b.x1 && w.y1 === b.y1);
        expect(word).toBeDefined();
        const token = c.text.slice(b.start, b.end).normalize('NFKC').toLowerCase();
        expect(word!.text.normalize('NFKC').toLowerCase().replace(/-$/, '')).toContain(token.replace(/-$/, ''));
      }
    });
    // Nearly every token finds its word (what is left: table separators, dot leaders made "…").
    expect(boxed / tokens).toBeGreaterThan(0.98);
  });

  it('deferLayout: a text PDF comes with its page sizes and no words, and the deferred read gives the same layout', async () => {
    // A page whose CropBox is smaller than its MediaBox (MSHA form), pages rotated 90° (WH-347), letter and
    // tabloid pages in one file (POA&M guide), landscape slides.
    const files = [
      'pdf/dol_msha-7000-1_mine_accident_report.pdf',
      'pdf/dol_wh-347_construction_payroll.pdf',
      POAM,
      'pdf/fedramp_data_bites_slides_2022-09-01.pdf',
    ];
    for (const f of files) {
      const file = corpus(f);
      const whole = await extractDocument(file, 'application/pdf', { ocr: false });
      const deferred = await extractDocument(file, 'application/pdf', { ocr: false, deferLayout: true });
      expect({ f, deferred: deferred.layoutDeferred }).toEqual({ f, deferred: true });
      expect(deferred.blocks).toEqual(whole.blocks);
      const sizes = (l: PageLayout[] | undefined) => l?.map(({ page, width, height }) => ({ page, width, height }));
      expect({ f, sizes: sizes(deferred.layout) }).toEqual({ f, sizes: sizes(whole.layout) });
      expect(deferred.layout!.every((p) => p.words.length === 0)).toBe(true);
      expect(await readDeferredLayout(file, deferred.layout!)).toEqual(whole.layout);
    }
  });

  it('places a quote on page 5 of the POA&M guide: one box per line, each word of the quote inside one of them', async () => {
    const file = corpus(POAM);
    const doc = await extractDocument(file, 'application/pdf', { ocr: false });
    const chunks = chunkDocument(doc);
    const all = chunkWordBoxes(chunks, doc.layout);
    const i = chunks.findIndex((c) => c.startPage !== null && c.startPage <= 5 && (c.endPage ?? 0) >= 5 && c.text.length > 400);
    expect(i).toBeGreaterThanOrEqual(0);
    const chunk = chunks[i];
    const from = chunk.pageSpans.find((s) => s.page === 5)?.offset ?? 0;
    const start = chunk.text.indexOf(' ', from + 20) + 1;
    const end = chunk.text.indexOf(' ', start + 200);
    const quoteBoxes = boxesForSpan(all[i], start, end);
    expect(quoteBoxes.length).toBeGreaterThan(1);
    const page = bboxPage(file, 5);
    const quoteWords = all[i].filter((b) => b.start < end && b.end > start);
    expect(quoteWords.length).toBeGreaterThan(20);
    for (const w of quoteWords) {
      expect(page.words.some((p) => p.x0 === w.x0 && p.y0 === w.y0)).toBe(true);
      expect(quoteBoxes.some((b) => b.page === w.page && inside(w, b))).toBe(true);
    }
    for (const b of quoteBoxes) {
      expect(b.x1).toBeLessThanOrEqual(page.width);
      expect(b.y1).toBeLessThanOrEqual(page.height);
    }
    // Lines go down the page (or on to the next page).
    for (let k = 1; k < quoteBoxes.length; k++) {
      const [a, b] = [quoteBoxes[k - 1], quoteBoxes[k]];
      expect(b.page > a.page || b.y0 >= a.y0).toBe(true);
    }
  });

  it('places the sentence under the heading it begins like on page 7 of the POA&M guide (CI found it on the heading)', async () => {
    const file = corpus(POAM);
    const doc = await extractDocument(file, 'application/pdf', { ocr: false });
    const chunks = chunkDocument(doc);
    const all = chunkWordBoxes(chunks, doc.layout);
    const quote = 'FedRAMP extensions and allowed values are cited in relevant portions of this document';
    const page = bboxPage(file, 7);
    // Every chunk that holds it (chunks overlap): the next chunk begins with it, and CI's quote came from there.
    const holding = chunks.map((c, i) => i).filter((i) => chunks[i].text.includes(quote));
    expect(holding.length).toBeGreaterThan(0);
    for (const i of holding) {
      const start = chunks[i].text.indexOf(quote);
      const [box, ...rest] = boxesForSpan(all[i], start, start + quote.length);
      expect(rest).toEqual([]);
      expect(
        page.words
          .filter((w) => inside(w, box))
          .map((w) => w.text)
          .join(' '),
      ).toBe(quote);
    }
  });
});

describe('alignment and line grouping rules', () => {
  /** A word of page 1: its text and box in points, `[text, x0, y0, x1, y1]`. */
  type PageWord = [string, number, number, number, number];
  /**
   * Aligns `text`, all of it on page 1 from offset 0, to a US-letter page holding `words`: the aligned
   * words, and the slice of `text` each one covers.
   */
  const alignOnPage = (text: string, words: PageWord[]) => {
    const page: PageLayout = { page: 1, width: 612, height: 792, words: words.map(([text, x0, y0, x1, y1]) => ({ text, x0, y0, x1, y1 })) };
    const aligned = alignChunkWords(text, [{ page: 1, offset: 0 }], 1, new Map([[1, page]]), new Map());
    return { words: aligned, covered: aligned.map((w) => text.slice(w.start, w.end)) };
  };

  it('joins a word hyphenated across lines ("regu-" + "lation") and skips words not in the text (running headers)', () => {
    const { words, covered } = alignOnPage('The regulation applies.', [
      ['HEADER', 10, 5, 60, 15],
      ['The', 10, 100, 30, 110],
      ['regu-', 35, 100, 70, 110],
      ['lation', 10, 112, 40, 122],
      ['applies.', 45, 112, 90, 122],
    ]);
    expect(covered).toEqual(['The', 'regu', 'lation', 'applies.']);
    expect(boxesForSpan(words, 4, 23)).toEqual([
      { page: 1, x0: 35, y0: 100, x1: 70, y1: 110 },
      { page: 1, x0: 10, y0: 112, x1: 90, y1: 122 },
    ]);
  });

  it('places a sentence that begins like an earlier heading on the sentence, where the words that follow also match', () => {
    const text = 'FedRAMP extensions and values are cited.';
    const { words, covered } = alignOnPage(text, [
      ['FedRAMP', 10, 20, 60, 30],
      ['Extensions', 65, 20, 120, 30],
      ['and', 125, 20, 140, 30],
      ['Values', 145, 20, 180, 30],
      ['NIST', 10, 50, 40, 60],
      ['designed', 45, 50, 90, 60],
      ['FedRAMP', 10, 100, 60, 110],
      ['extensions', 65, 100, 120, 110],
      ['and', 125, 100, 140, 110],
      ['values', 145, 100, 180, 110],
      ['are', 185, 100, 200, 110],
      ['cited.', 205, 100, 240, 110],
    ]);
    expect(covered).toEqual(['FedRAMP', 'extensions', 'and', 'values', 'are', 'cited.']);
    expect(boxesForSpan(words, 0, text.length)).toEqual([{ page: 1, x0: 10, y0: 100, x1: 240, y1: 110 }]);
  });

  it('gives no box to tokens that are not words of the page (" | " between table cells) and [] without a layout', () => {
    const { words } = alignOnPage('Name | Role', [
      ['Name', 10, 100, 40, 110],
      ['Role', 100, 100, 130, 110],
    ]);
    expect(words.map((w) => [w.start, w.end])).toEqual([
      [0, 4],
      [7, 11],
    ]);
    expect(chunkWordBoxes([{ text: 'Name | Role', pageSpans: [], startPage: null }], undefined)).toEqual([[]]);
  });

  it('reads tesseract TSV words in points: pixels × 72 / dpi', () => {
    const tsv = [
      'level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext',
      '4\t1\t1\t1\t1\t0\t300\t600\t900\t60\t-1\t',
      '5\t1\t1\t1\t1\t1\t300\t600\t300\t60\t96.5\tHello',
      '5\t1\t1\t1\t1\t2\t650\t600\t550\t60\t95.1\tworld',
    ].join('\n');
    expect(parseTesseractTsv(tsv, 300)).toEqual([
      { text: 'Hello', x0: 72, y0: 144, x1: 144, y1: 158.4 },
      { text: 'world', x0: 156, y0: 144, x1: 288, y1: 158.4 },
    ]);
  });
});

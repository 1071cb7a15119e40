/**
 * Word boxes of PDF pages (decisions.md "Where a quote stands (for highlighting)"): poppler's
 * `pdftotext -bbox-layout` for pages with a text layer, tesseract's TSV for OCRed pages, and the
 * alignment of those words to the text of each chunk. Stored with the chunk at ingestion, so a quote
 * is placed on the page without reading the PDF again.
 */
import type { WordBox } from '@kb/knowledge';
import { ExtractionContext } from './context';
import { runProcess, ToolMissingError } from './process';
import { ExtractionError, type PageLayout, type PageWord } from './types';

/**
 * Rounds a coordinate to 0.01 pt, as `roundPt` of `@kb/knowledge` does (not imported: the extraction worker
 * thread loads these modules and must not load `@kb/common` with it).
 */
export const roundPoints = (v: number) => Math.round(v * 100) / 100;

function unescapeXml(s: string): string {
  return s
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&#(\d+);/g, (_, d: string) => String.fromCodePoint(Number(d)))
    .replace(/&#x([0-9a-f]+);/gi, (_, h: string) => String.fromCodePoint(parseInt(h, 16)))
    .replace(/&amp;/g, '&');
}

/**
 * Parses the XHTML of `pdftotext -bbox-layout`: `<page width height>` elements in order, each with
 * `<word xMin yMin xMax yMax>text</word>` elements in reading order (coordinates already in points
 * with the origin at the top-left). Pages are numbered from 1 in document order.
 */
export function parseBboxLayout(xhtml: string): PageLayout[] {
  const pages: PageLayout[] = [];
  const re = /<page width="([\d.]+)" height="([\d.]+)">|<word xMin="([-\d.]+)" yMin="([-\d.]+)" xMax="([-\d.]+)" yMax="([-\d.]+)">([^<]*)<\/word>/g;
  for (let m = re.exec(xhtml); m; m = re.exec(xhtml)) {
    if (m[1] !== undefined) {
      pages.push({ page: pages.length + 1, width: roundPoints(Number(m[1])), height: roundPoints(Number(m[2])), words: [] });
    } else if (pages.length > 0) {
      const text = unescapeXml(m[7]);
      if (text.trim())
        pages[pages.length - 1].words.push({
          text,
          x0: roundPoints(Number(m[3])),
          y0: roundPoints(Number(m[4])),
          x1: roundPoints(Number(m[5])),
          y1: roundPoints(Number(m[6])),
        });
    }
  }
  return pages;
}

/**
 * Reads the word boxes and page sizes of a whole PDF with one `pdftotext -bbox-layout` run.
 * Returns null (quotes of this document then get no boxes, nothing fails) when poppler is missing,
 * the output is larger than `maxBytes` or pdftotext fails; the abort reason is rethrown.
 */
export async function readPdfLayout(ctx: ExtractionContext, filePath: string, maxBytes: number): Promise<PageLayout[] | null> {
  try {
    const r = await runProcess(ctx, 'pdftotext', ['-bbox-layout', '-enc', 'UTF-8', filePath, '-'], { maxOutputBytes: maxBytes });
    if (r.code !== 0) return null;
    return parseBboxLayout(r.stdout.toString('utf8'));
  } catch (e) {
    if (e instanceof ToolMissingError || (e instanceof ExtractionError && e.code === 'TOO_LARGE')) return null;
    throw e;
  }
}

/**
 * Parses tesseract's TSV output (`tesseract … tsv`): the words (level 5, non-empty text) in reading
 * order, their pixel boxes at `dpi` converted to points (× 72 / dpi), origin top-left.
 */
export function parseTesseractTsv(tsv: string, dpi: number): PageWord[] {
  const scale = 72 / dpi;
  const words: PageWord[] = [];
  for (const line of tsv.split('\n')) {
    const f = line.split('\t');
    if (f.length < 12 || f[0] !== '5') continue;
    const text = f.slice(11).join('\t').trim();
    if (!text) continue;
    const [left, top, width, height] = [Number(f[6]), Number(f[7]), Number(f[8]), Number(f[9])];
    if (![left, top, width, height].every(Number.isFinite)) continue;
    words.push({
      text,
      x0: roundPoints(left * scale),
      y0: roundPoints(top * scale),
      x1: roundPoints((left + width) * scale),
      y1: roundPoints((top + height) * scale),
    });
  }
  return words;
}

/** Comparable form of a word: NFKC, no soft hyphens or zero-width characters, lowercase. */
function norm(s: string): string {
  return s
    .normalize('NFKC')
    .replace(/[\u00ad\u200b-\u200d\ufeff]/g, '')
    .toLowerCase();
}

/** How far ahead in a page's words a chunk token is looked for (skips running lines, dot leaders…). */
const LOOKAHEAD = 60;
/** How far before the last match a chunk starts looking (chunks repeat the previous one's last sentences). */
const LOOKBACK = 400;
/** Most PDF words one token of the chunk text may join ("regu-" + "lation", "FedRAMP" + "®"). */
const MAX_JOIN = 4;

interface Token {
  start: number;
  end: number;
  page: number;
}

/** The page of character `offset` of a chunk from its page spans (the last span at or before it). */
function pageAt(spans: readonly { page: number; offset: number }[], offset: number, fallback: number): number {
  let page = fallback;
  for (const s of spans) {
    if (s.offset <= offset) page = s.page;
    else break;
  }
  return page;
}

/**
 * Tries to match the token `t` (normalised) with the words of `words` starting at `i`: one word
 * equal to it, or up to {@link MAX_JOIN} consecutive words whose concatenation (a line-end hyphen
 * dropped or kept) equals it. Returns the number of words matched, 0 when none.
 */
function matchAt(t: string, words: readonly PageWord[], i: number): number {
  let joined = '';
  for (let k = 0; k < MAX_JOIN && i + k < words.length; k++) {
    const w = norm(words[i + k].text);
    const candidates = k > 0 && joined.endsWith('-') ? [joined.slice(0, -1) + w, joined + w] : [joined + w];
    const exact = candidates.find((c) => c === t);
    if (exact !== undefined) return k + 1;
    joined = candidates.find((c) => t.startsWith(c.endsWith('-') ? c.slice(0, -1) : c)) ?? '';
    if (!joined) return 0;
  }
  return 0;
}

/**
 * How many chunk tokens after a candidate match are checked against the words that follow it: of
 * the candidate words for a token, the one followed by the longest run of matching words wins (a
 * chunk sentence that begins like the page's heading, "FedRAMP extensions and allowed values are
 * cited…" under "FedRAMP Extensions and Allowed Values", is placed on the sentence, not the heading).
 */
const RUN = 6;

/**
 * How many of `next` (normalised tokens following a matched one) match the words from `i` on,
 * consecutively ({@link matchAt}); stops at the first that does not.
 */
function runLength(next: readonly string[], words: readonly PageWord[], i: number): number {
  let run = 0;
  for (const t of next) {
    const n = matchAt(t, words, i);
    if (n === 0) break;
    run++;
    i += n;
  }
  return run;
}

/**
 * The word boxes of one chunk's text: walks the chunk's tokens (runs of non-space characters) and
 * the words of their pages in order, matching each token to an equal word (or few words, see
 * {@link matchAt}) within {@link LOOKAHEAD} words. Of several candidate words, the one whose
 * following words also match the following tokens (longest run, up to {@link RUN}; the first on a
 * tie) is taken, so a repeated phrase is placed where the sentence goes on. Tokens without a match
 * (table separators " | ", dot leaders turned into "…", text that is not in the layout) get no box;
 * PDF words without a token (stripped running headers and footers) are skipped. A token made of
 * several words gets one box per word, its characters shared out in order.
 *
 * @param cursors per page, the index after the last word matched by earlier chunks (updated).
 * @returns boxes in text order with offsets into `text`.
 */
export function alignChunkWords(
  text: string,
  pageSpans: readonly { page: number; offset: number }[],
  startPage: number | null,
  layout: ReadonlyMap<number, PageLayout>,
  cursors: Map<number, number>,
): WordBox[] {
  if (startPage === null && pageSpans.length === 0) return [];
  const fallback = startPage ?? pageSpans[0].page;
  const tokens: (Token & { norm: string })[] = [];
  for (const m of text.matchAll(/\S+/g)) {
    tokens.push({ start: m.index, end: m.index + m[0].length, page: pageAt(pageSpans, m.index, fallback), norm: norm(m[0]) });
  }
  const boxes: WordBox[] = [];
  const local = new Map<number, number>();
  tokens.forEach((tok, ti) => {
    const page = layout.get(tok.page);
    if (!page || page.words.length === 0) return;
    let from = local.get(tok.page);
    if (from === undefined) from = Math.max(0, (cursors.get(tok.page) ?? 0) - LOOKBACK);
    const limit = Math.min(page.words.length, from + (local.has(tok.page) ? LOOKAHEAD : LOOKAHEAD + LOOKBACK));
    const next: string[] = [];
    for (let k = ti + 1; k < tokens.length && next.length < RUN && tokens[k].page === tok.page; k++) next.push(tokens[k].norm);
    let best: { i: number; n: number; run: number } | null = null;
    for (let i = from; i < limit; i++) {
      const n = matchAt(tok.norm, page.words, i);
      if (n === 0) continue;
      const run = runLength(next, page.words, i + n);
      if (!best || run > best.run) best = { i, n, run };
      if (run === next.length) break;
    }
    if (!best) return;
    let at = tok.start;
    for (let k = 0; k < best.n; k++) {
      const w = page.words[best.i + k];
      const len = k === best.n - 1 ? tok.end - at : Math.min(tok.end - at, w.text.replace(/-$/, '').length);
      boxes.push({ start: at, end: at + len, page: tok.page, x0: w.x0, y0: w.y0, x1: w.x1, y1: w.y1 });
      at += len;
    }
    local.set(tok.page, best.i + best.n);
  });
  for (const [page, next] of local) cursors.set(page, Math.max(cursors.get(page) ?? 0, next));
  return boxes.filter((b) => b.end > b.start);
}

/**
 * Word boxes of every chunk of a document, in chunk order (`[]` for each chunk when there is no
 * layout: formats without pages, poppler missing).
 */
export function chunkWordBoxes(
  chunks: readonly { text: string; pageSpans: readonly { page: number; offset: number }[]; startPage: number | null }[],
  pages: readonly PageLayout[] | undefined,
): WordBox[][] {
  if (!pages || pages.length === 0) return chunks.map(() => []);
  const layout = new Map(pages.map((p) => [p.page, p]));
  const cursors = new Map<number, number>();
  return chunks.map((c) => alignChunkWords(c.text, c.pageSpans, c.startPage, layout, cursors));
}

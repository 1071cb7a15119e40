/**
 * Where a quote stands (decisions.md "Where a quote stands (for highlighting)"): the quote's
 * character offsets in its chunk's `text`, and for PDFs one box per line of the quote in PDF points
 * (origin at the page's top-left, pages 1-based).
 *
 * Ingestion stores, with every chunk of a PDF, the box of each word of the chunk text
 * ({@link WordBox}); a source or citation takes the boxes of the words its quote covers, grouped per
 * line ({@link boxesForSpan}). Chunks of formats without pages, and chunks indexed before word boxes
 * were stored, have no word boxes: their quotes get `boxes: []`.
 */
import { findVerbatim } from '@kb/text';

/**
 * The box of one word of a chunk's text: `start`/`end` are character offsets [start, end) in the
 * chunk's `text` (UTF-16 code units), `page` is 1-based, `x0,y0` the top-left and `x1,y1` the
 * bottom-right corner in PDF points with the origin at the page's top-left (rounded to 0.01 pt).
 */
export interface WordBox {
  start: number;
  end: number;
  page: number;
  x0: number;
  y0: number;
  x1: number;
  y1: number;
}

/** One highlighted rectangle: a line (or the part of a line) of a quote, in PDF points, top-left origin. */
export interface QuoteBox {
  page: number;
  x0: number;
  y0: number;
  x1: number;
  y1: number;
}

/** A quote's offsets in its chunk's `text`: `text.slice(charStart, charEnd)` is the quote. */
export interface QuoteLocation {
  charStart: number;
  charEnd: number;
}

/** Rounds a coordinate to 0.01 pt (what is stored and returned). */
export function roundPt(v: number): number {
  return Math.round(v * 100) / 100;
}

/** Do two boxes of one page share a line: their vertical extents overlap by half the smaller height. */
function sameLine(a: QuoteBox, b: WordBox): boolean {
  if (a.page !== b.page) return false;
  const overlap = Math.min(a.y1, b.y1) - Math.max(a.y0, b.y0);
  const smaller = Math.min(a.y1 - a.y0, b.y1 - b.y0);
  return overlap > 0 && overlap >= smaller / 2 - 0.01;
}

/**
 * The boxes of the words that overlap [start, end) of the chunk text, one per line: the words of a
 * line (same page, overlapping vertical extent, consecutive in reading order) become one box from
 * the smallest x0/y0 to the largest x1/y1. In reading order; `[]` when no word box covers the span
 * (formats without pages, chunks stored without word boxes).
 *
 * @param words the chunk's word boxes (any order; sorted by `start` here).
 * @param start inclusive, end exclusive character offsets into the chunk text.
 */
export function boxesForSpan(words: readonly WordBox[], start: number, end: number): QuoteBox[] {
  const covered = words.filter((w) => w.start < end && w.end > start).sort((a, b) => a.start - b.start);
  const lines: QuoteBox[] = [];
  for (const w of covered) {
    const last = lines[lines.length - 1];
    if (last && sameLine(last, w)) {
      last.x0 = Math.min(last.x0, w.x0);
      last.y0 = Math.min(last.y0, w.y0);
      last.x1 = Math.max(last.x1, w.x1);
      last.y1 = Math.max(last.y1, w.y1);
    } else {
      lines.push({ page: w.page, x0: w.x0, y0: w.y0, x1: w.x1, y1: w.y1 });
    }
  }
  return lines.map((b) => ({ page: b.page, x0: roundPt(b.x0), y0: roundPt(b.y0), x1: roundPt(b.x1), y1: roundPt(b.y1) }));
}

/**
 * The offsets of `quote` in `text`: the given `hint` when `text.slice(hint.start, hint.end)` is the
 * quote (the judge and the answerer know where they took it), else its first verbatim occurrence
 * (whitespace runs matching any whitespace run), else null (a quote that is not in the chunk).
 */
export function locateQuote(text: string, quote: string, hint?: { start: number; end: number } | null): QuoteLocation | null {
  if (!quote) return null;
  if (hint && hint.start >= 0 && hint.end <= text.length && hint.start < hint.end && text.slice(hint.start, hint.end) === quote) {
    return { charStart: hint.start, charEnd: hint.end };
  }
  const at = text.indexOf(quote);
  if (at >= 0) return { charStart: at, charEnd: at + quote.length };
  const found = findVerbatim(text, quote);
  return found ? { charStart: found.start, charEnd: found.end } : null;
}

/**
 * Where a quote stands, as stored with a verdict or citation: its location in the chunk text (null
 * when the quote cannot be found in it) and its boxes (`[]` without word boxes or location).
 */
export function quotePlacement(
  chunkText: string,
  wordBoxes: readonly WordBox[] | undefined,
  quote: string,
  hint?: { start: number; end: number } | null,
): { location: QuoteLocation | null; boxes: QuoteBox[] } {
  const location = locateQuote(chunkText, quote, hint);
  const boxes = location && wordBoxes && wordBoxes.length > 0 ? boxesForSpan(wordBoxes, location.charStart, location.charEnd) : [];
  return { location, boxes };
}

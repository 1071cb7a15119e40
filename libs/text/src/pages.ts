import type { PassageInput, Quote } from './types';

/**
 * Pages covered by the character span [start, end) of `passage.text`.
 *
 * Uses `passage.pageSpans` (page starts as offsets into the text): the start page is the page of the last
 * span starting at or before `start`, the end page that of the last span starting before `end`. Text
 * before the first span belongs to `passage.startPage` (or the first span's page when that is null).
 * With no `pageSpans` the passage's own `startPage`/`endPage` are returned (null for formats without pages).
 *
 * @param start inclusive character offset, end exclusive offset (clamped to the text; end < start is
 *   treated as an empty span at start).
 */
export function pagesOfSpan(passage: PassageInput, start: number, end: number): { startPage: number | null; endPage: number | null } {
  const spans = (passage.pageSpans ?? []).filter((s) => Number.isFinite(s.offset)).sort((a, b) => a.offset - b.offset);
  if (spans.length === 0) return { startPage: passage.startPage, endPage: passage.endPage };
  const len = passage.text.length;
  const s = Math.max(0, Math.min(start, len));
  const e = Math.max(s, Math.min(end, len));
  const before = passage.startPage ?? spans[0].page;
  const pageAt = (offset: number, inclusive: boolean): number => {
    let page = before;
    for (const span of spans) {
      if (inclusive ? span.offset <= offset : span.offset < offset) page = span.page;
      else break;
    }
    return page;
  };
  const startPage = pageAt(s, true);
  const endPage = e > s ? pageAt(e, false) : startPage;
  return { startPage, endPage: Math.max(startPage, endPage) };
}

/** Builds a {@link Quote} for `passage.text.slice(start, end)` with its own pages. */
export function makeQuote(passage: PassageInput, start: number, end: number): Quote {
  const { startPage, endPage } = pagesOfSpan(passage, start, end);
  return { passage, quote: passage.text.slice(start, end), start, end, startPage, endPage };
}

import type { PassageInput } from './types';

/** Builds a passage for tests; `pages` maps page numbers to their text, in order. */
export function passageOf(pages: [number, string][], extra: Partial<PassageInput> = {}): PassageInput {
  let text = '';
  const pageSpans: { page: number; offset: number }[] = [];
  for (const [page, t] of pages) {
    if (text) text += '\n\n';
    pageSpans.push({ page, offset: text.length });
    text += t;
  }
  return {
    chunkId: 'chunk-1',
    documentId: 'doc-1',
    fileName: 'site-safety-plan.pdf',
    text,
    startPage: pages[0]?.[0] ?? null,
    endPage: pages[pages.length - 1]?.[0] ?? null,
    pageSpans,
    score: 1,
    ...extra,
  };
}

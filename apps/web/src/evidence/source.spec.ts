// The two API shapes of "where a quote stands" (a check verdict's source, an agent citation) read
// into the viewer's one shape: a wrong mapping shows the wrong document, page or passage.
// (apps/web's tsconfig carries no Jest types: the globals are imported.)
import { describe, expect, it } from '@jest/globals';
import { fromCheckSource, fromCitation, isPdfContentType, locationFits, pagesOf } from './source';

const box7 = { page: 7, x0: 81.53, y0: 481.75, x1: 511.79, y1: 491.93 };
const box8 = { page: 8, x0: 72, y0: 90, x1: 300, y1: 101.5 };

describe('evidence sources', () => {
  it('reads a check source: handbook_id is the document, node_id the chunk, title the file name', () => {
    const source = {
      handbook_id: 'doc-1',
      node_id: 'chunk-1',
      title: 'poam.pdf',
      start_page: 7,
      end_page: 8,
      section: null,
      location: { char_start: 3, char_end: 40 },
      boxes: [box8, box7],
    };
    expect(fromCheckSource(source)).toEqual({
      documentId: 'doc-1',
      chunkId: 'chunk-1',
      fileName: 'poam.pdf',
      startPage: 7,
      endPage: 8,
      location: { char_start: 3, char_end: 40 },
      boxes: [box8, box7],
    });
  });

  it('reads a citation, keeping its quote', () => {
    const citation = {
      index: 1,
      document_id: 'doc-2',
      chunk_id: 'chunk-2',
      file_name: 'policy.md',
      start_page: null,
      end_page: null,
      quote: 'All visitors sign in.',
      score: 0.9,
      section: null,
      location: null,
      boxes: [],
    };
    expect(fromCitation(citation)).toEqual({
      documentId: 'doc-2',
      chunkId: 'chunk-2',
      fileName: 'policy.md',
      startPage: null,
      endPage: null,
      location: null,
      boxes: [],
      quote: 'All visitors sign in.',
    });
  });

  it('lists the pages of a quote once each, in page order (the first is the one shown)', () => {
    expect(pagesOf([box8, box7, { ...box8, y0: 110, y1: 120 }])).toEqual([7, 8]);
    expect(pagesOf([])).toEqual([]);
  });

  it('tells a PDF by its content type, parameters and case aside', () => {
    expect(isPdfContentType('application/pdf')).toBe(true);
    expect(isPdfContentType('Application/PDF; charset=binary')).toBe(true);
    expect(isPdfContentType('text/markdown')).toBe(false);
    expect(isPdfContentType(undefined)).toBe(false);
  });

  it('places a quote only where its offsets fall inside the passage', () => {
    const text = 'Intro. All visitors sign in.';
    expect(locationFits(text, { char_start: 7, char_end: 28 })).toBe(true);
    expect(locationFits(text, { char_start: 7, char_end: 29 })).toBe(false);
    expect(locationFits(text, { char_start: 5, char_end: 5 })).toBe(false);
    expect(locationFits(text, { char_start: -1, char_end: 4 })).toBe(false);
    expect(locationFits(text, null)).toBe(false);
  });
});

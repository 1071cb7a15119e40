/**
 * The one shape the evidence viewer takes: where a verdict's source or an answer's citation points
 * (decisions.md "Where a quote stands (for highlighting)"), whichever API shape it came from.
 */
import type { components, QuoteBox, QuoteLocation } from '@kb-platform/sdk/browser';

/**
 * A passage to show: the chunk `chunkId` of document `documentId`, with where its quote stands.
 * - `location`: offsets (UTF-16 code units) of the quote in the chunk's `text`; null when not recorded.
 * - `boxes`: one box per line of the quote, PDF points, origin at the page's top-left, pages 1-based;
 *   `[]` for formats without pages (and for documents processed before boxes were stored).
 * - `startPage` / `endPage`: 1-based pages the chunk spans; null where the format has no pages.
 */
export interface EvidenceSource {
  documentId: string;
  chunkId: string;
  fileName: string;
  startPage: number | null;
  endPage: number | null;
  location: QuoteLocation | null;
  boxes: QuoteBox[];
  /** The quoted text where the API gives it (a citation's `quote`), for labels; absent for check sources. */
  quote?: string;
}

/** What {@link fromCheckSource} reads of a check source (`sources[]` of a sub-requirement, or of a verify verdict). */
export type CheckSource = Pick<components['schemas']['SourceView'], 'handbook_id' | 'node_id' | 'title' | 'start_page' | 'end_page' | 'location' | 'boxes'>;
/** What {@link fromCitation} reads of an agent citation (`citations[]` of an answer, a chat reply or a batch result). */
export type Citation = Pick<
  components['schemas']['CitationView'],
  'document_id' | 'chunk_id' | 'file_name' | 'start_page' | 'end_page' | 'quote' | 'location' | 'boxes'
>;

/**
 * A check verdict's source (`sub_requirements[].sources[]`, or a verify verdict's `sources[]`) as an
 * {@link EvidenceSource}: `handbook_id` is the document, `node_id` the chunk, `title` the file name.
 */
export function fromCheckSource(source: CheckSource): EvidenceSource {
  return { documentId: source.handbook_id, chunkId: source.node_id, fileName: source.title, ...placeOf(source) };
}

/** An agent citation (`citations[]` of an answer, a chat reply or a batch result) as an {@link EvidenceSource}. */
export function fromCitation(citation: Citation): EvidenceSource {
  return { documentId: citation.document_id, chunkId: citation.chunk_id, fileName: citation.file_name, ...placeOf(citation), quote: citation.quote };
}

/** The pages and the quote's place, named alike in both API shapes (`location` absent → null, `boxes` absent → []). */
function placeOf(s: Pick<CheckSource, 'start_page' | 'end_page' | 'location' | 'boxes'>): Pick<EvidenceSource, 'startPage' | 'endPage' | 'location' | 'boxes'> {
  return { startPage: s.start_page, endPage: s.end_page, location: s.location ?? null, boxes: s.boxes ?? [] };
}

/** The distinct pages of `boxes`, ascending (1-based). */
export function pagesOf(boxes: readonly QuoteBox[]): number[] {
  return [...new Set(boxes.map((b) => b.page))].sort((a, b) => a - b);
}

/** Whether a MIME type is PDF (`application/pdf`, parameters and case ignored). */
export function isPdfContentType(contentType: string | null | undefined): boolean {
  return (contentType ?? '').split(';')[0].trim().toLowerCase() === 'application/pdf';
}

/**
 * Whether `location` can be placed in `text`: whole offsets with 0 <= char_start < char_end <= text.length.
 * A location outside the text (a chunk re-processed since the verdict) is treated as none.
 */
export function locationFits(text: string, location: QuoteLocation | null): location is QuoteLocation {
  if (!location) return false;
  const { char_start: start, char_end: end } = location;
  return Number.isInteger(start) && Number.isInteger(end) && start >= 0 && start < end && end <= text.length;
}

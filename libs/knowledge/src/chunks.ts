import { pickFields, sectionOf } from '@kb/common';
import { retrievalV1 } from '@kb/proto';
import type { PassageInput } from '@kb/text';
import type { WordBox } from './locations';

/** Where one page's text begins inside a chunk's `text` (`offset` in UTF-16 code units). */
export interface PageSpan {
  page: number;
  offset: number;
}

/**
 * A chunk of an indexed document, the one domain record of it: ingestion produces it, retrieval
 * stores it (adding the owning org), documents lists it, the answerer and the judge cite it. On
 * the wire it is `kb.retrieval.v1.Chunk` ({@link chunkToProto} / {@link chunkFromProto}).
 */
export interface IndexedChunk {
  /** Chunk id (a UUID); unique within an org. */
  id: string;
  documentId: string;
  /** Project of the document, or `null` for an organization-level document. */
  projectId: string | null;
  fileName: string;
  /** 0-based position of the chunk in its document. */
  chunkIndex: number;
  text: string;
  /** Headings enclosing the chunk, outermost first (may be empty). */
  headingPath: string[];
  /** 1-based pages the chunk starts and ends on, or `null` when the format has no pages. */
  startPage: number | null;
  endPage: number | null;
  /** Where each page's text begins in `text`, ascending. */
  pageSpans: PageSpan[];
  /**
   * Box of each word of `text` in the PDF page (points, top-left origin), in text order, stored at
   * ingestion; empty for formats without pages and for chunks indexed before boxes were stored.
   */
  wordBoxes: WordBox[];
}

/** The fields of a chunk, the same in the domain record and in `kb.retrieval.v1.Chunk`. */
const CHUNK_FIELDS = [
  'id',
  'documentId',
  'projectId',
  'fileName',
  'chunkIndex',
  'text',
  'headingPath',
  'startPage',
  'endPage',
  'pageSpans',
  'wordBoxes',
] as const;

/**
 * The wire form of a chunk. Only the chunk's own fields are copied, so a record carrying more (the
 * retrieval store's `orgId`) never leaks them; `null` pages/project become unset optionals.
 */
export function chunkToProto(c: IndexedChunk): retrievalV1.Chunk {
  return pickFields(c, CHUNK_FIELDS, undefined);
}

/** The domain form of a wire chunk: unset optionals become `null`. */
export function chunkFromProto(c: retrievalV1.Chunk): IndexedChunk {
  return pickFields(c, CHUNK_FIELDS, null);
}

/**
 * A retrieved chunk as the passage the answerer and the judge read: `section` is the heading path
 * joined by " > " (decisions.md "Chunks"), `score` the retrieval score.
 */
export function passageOf(c: IndexedChunk, score: number): PassageInput {
  return {
    chunkId: c.id,
    documentId: c.documentId,
    fileName: c.fileName,
    text: c.text,
    startPage: c.startPage,
    endPage: c.endPage,
    pageSpans: c.pageSpans,
    wordBoxes: c.wordBoxes,
    section: sectionOf(c.headingPath),
    score,
  };
}

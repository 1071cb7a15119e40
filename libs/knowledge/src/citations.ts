import { pickFields } from '@kb/common';
import { agentV1 } from '@kb/proto';
import type { QuoteBox, QuoteLocation } from './locations';

/**
 * One cited source of an answer (decisions.md "POST /api/v2/agent/query"): `quote` is verbatim
 * from the chunk `chunkId`, `index` matches the answer's [n] marker; pages are those of the quote
 * (1-based, null where the format has no pages); `section` is the chunk's heading path joined by
 * " > ", null when it is under no heading. On the wire it is `kb.agent.v1.Citation`.
 */
export interface Citation {
  index: number;
  documentId: string;
  fileName: string;
  chunkId: string;
  startPage: number | null;
  endPage: number | null;
  quote: string;
  /** Retrieval score of the cited chunk, higher = better. */
  score: number;
  section: string | null;
  /** The quote's offsets in the chunk's text (decisions.md "Where a quote stands"); null when unknown. */
  location: QuoteLocation | null;
  /** One box per line of the quote in its PDF page (points, top-left origin); `[]` without pages. */
  boxes: QuoteBox[];
}

/** The fields of a citation, the same in the domain record and in `kb.agent.v1.Citation`. */
const CITATION_FIELDS = ['index', 'documentId', 'fileName', 'chunkId', 'startPage', 'endPage', 'quote', 'score', 'section', 'location', 'boxes'] as const;

/** The wire form of a citation: `null` pages/section become unset optionals. */
export function citationToProto(c: Citation): agentV1.Citation {
  return pickFields(c, CITATION_FIELDS, undefined);
}

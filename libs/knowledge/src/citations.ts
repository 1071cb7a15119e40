import { pickFields } from '@kb/common';
import { agentV1 } from '@kb/proto';

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
}

/** The fields of a citation, the same in the domain record and in `kb.agent.v1.Citation`. */
const CITATION_FIELDS = ['index', 'documentId', 'fileName', 'chunkId', 'startPage', 'endPage', 'quote', 'score', 'section'] as const;

/** The wire form of a citation: `null` pages/section become unset optionals. */
export function citationToProto(c: Citation): agentV1.Citation {
  return pickFields(c, CITATION_FIELDS, undefined);
}

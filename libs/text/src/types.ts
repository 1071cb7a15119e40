/** One retrieved chunk, as handed over by retrieval. */
export interface PassageInput {
  chunkId: string;
  documentId: string;
  fileName: string;
  /** Exact chunk text; quotes are substrings of it. */
  text: string;
  /** 1-based first and last page of the chunk; null where the format has no pages. */
  startPage: number | null;
  endPage: number | null;
  /** Where each page's text starts inside `text` (ascending offsets, may be empty). */
  pageSpans: { page: number; offset: number }[];
  /**
   * Box of each word of `text` in its PDF page (`start`/`end` offsets in `text`, points, top-left
   * origin; `WordBox` of @kb/knowledge); absent or empty where there are none.
   */
  wordBoxes?: { start: number; end: number; page: number; x0: number; y0: number; x1: number; y1: number }[];
  /** Heading path of the chunk joined by " > " (`sectionOf` in @kb/common); null/absent when under no heading. */
  section?: string | null;
  /** Retrieval score, higher = better (any scale; only its order and ratio to the best are used). */
  score: number;
}

/** A verbatim piece of a passage: `passage.text.slice(start, end) === quote`. */
export interface Quote {
  passage: PassageInput;
  quote: string;
  start: number;
  end: number;
  /** Pages of the quote itself (via `pageSpans`), else the passage's pages. */
  startPage: number | null;
  endPage: number | null;
}

/** Model-token usage, reported for quotas even when no model runs. */
export interface Usage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

/**
 * The stored justification of a sub-requirement: the judge's explanation and, when the verdict quotes
 * evidence, `\nEvidence: "<quote>"` (whitespace collapsed), clipped to {@link MAX_JUSTIFICATION}
 * characters with a final "…" (which then drops the closing quote mark). One writer (the run worker)
 * and one reader (compare, reports) of the format.
 */

/** Most characters of a stored justification. */
export const MAX_JUSTIFICATION = 4000;

const EVIDENCE_MARK = '\nEvidence: "';

/**
 * The justification to store for an explanation and its quoted evidence (empty or null = none).
 * @returns at most {@link MAX_JUSTIFICATION} characters.
 */
export function justificationOf(explanation: string, evidence: string | null | undefined): string {
  const full = evidence ? `${explanation}${EVIDENCE_MARK}${evidence.replace(/\s+/g, ' ').trim()}"` : explanation;
  return full.length > MAX_JUSTIFICATION ? `${full.slice(0, MAX_JUSTIFICATION - 1)}…` : full;
}

/**
 * The quote inside a stored justification (see {@link justificationOf}); a clipped quote keeps its "…".
 * @returns the quote, or null when the justification carries none.
 */
export function evidenceOf(justification: string): string | null {
  const at = justification.lastIndexOf(EVIDENCE_MARK);
  if (at < 0) return null;
  const quote = justification.slice(at + EVIDENCE_MARK.length);
  const text = quote.endsWith('"') ? quote.slice(0, -1) : quote;
  return text.trim() ? text : null;
}

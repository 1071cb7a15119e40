/**
 * Content types the service accepts for upload (decisions.md "Documents"), canonical spelling.
 * Ingestion has an extractor for each.
 */
export const ACCEPTED_CONTENT_TYPES = [
  'application/pdf',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  'application/vnd.openxmlformats-officedocument.presentationml.presentation',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  'text/csv',
  'text/plain',
  'text/markdown',
  'text/html',
  'application/json',
  'image/png',
  'image/jpeg',
  'image/tiff',
] as const;

const ALIASES: Record<string, string> = {
  'text/x-markdown': 'text/markdown',
  'image/jpg': 'image/jpeg',
  'application/x-pdf': 'application/pdf',
  'image/tif': 'image/tiff',
  'application/csv': 'text/csv',
};

/**
 * Normalises a MIME type for comparison: lowercase, parameters (`; charset=…`) dropped, common
 * aliases mapped to the canonical type. Returns '' for empty input.
 */
export function normalizeContentType(value: string | null | undefined): string {
  const base = (value ?? '').split(';')[0].trim().toLowerCase();
  return ALIASES[base] ?? base;
}

/** Whether `value` (after normalisation) is an accepted upload type. */
export function isAcceptedContentType(value: string): boolean {
  return (ACCEPTED_CONTENT_TYPES as readonly string[]).includes(normalizeContentType(value));
}

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

/**
 * Content type of an accepted upload by file extension (lower case, with the dot), for clients
 * that upload files from disk (kbctl safety load, tests, scripts).
 */
export const CONTENT_TYPE_BY_EXTENSION: Readonly<Record<string, (typeof ACCEPTED_CONTENT_TYPES)[number]>> = {
  '.pdf': 'application/pdf',
  '.docx': 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  '.pptx': 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
  '.xlsx': 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  '.csv': 'text/csv',
  '.txt': 'text/plain',
  '.md': 'text/markdown',
  '.markdown': 'text/markdown',
  '.html': 'text/html',
  '.htm': 'text/html',
  '.json': 'application/json',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.tif': 'image/tiff',
  '.tiff': 'image/tiff',
};

/** The accepted content type of a file name by its extension (any case), or undefined. */
export function contentTypeForFile(fileName: string): string | undefined {
  const dot = fileName.lastIndexOf('.');
  return dot === -1 ? undefined : CONTENT_TYPE_BY_EXTENSION[fileName.slice(dot).toLowerCase()];
}

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

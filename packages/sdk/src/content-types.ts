import type { paths } from './generated/openapi';

/** A content type the service accepts at reservation (the document's enum). */
export type UploadContentType = NonNullable<paths['/api/v2/documents']['post']['requestBody']>['content']['application/json']['content_type'];

/**
 * Content type to declare for a file, by extension: the upload types the service accepts
 * (decisions.md "Documents": PDF, DOCX, PPTX, XLSX, CSV, TXT, Markdown, HTML, JSON, PNG, JPEG,
 * TIFF). Other extensions give undefined: the helpers skip such files rather than have the
 * service refuse them.
 */
export const CONTENT_TYPE_BY_EXTENSION: Readonly<Record<string, UploadContentType>> = {
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

/** The content type for `fileName` by its extension (any case), or undefined when the service does not take it. */
export function contentTypeFor(fileName: string): UploadContentType | undefined {
  const dot = fileName.lastIndexOf('.');
  return dot === -1 ? undefined : CONTENT_TYPE_BY_EXTENSION[fileName.slice(dot).toLowerCase()];
}

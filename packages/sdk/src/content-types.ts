import { UPLOAD_CONTENT_TYPES } from './generated/content-types';

export { UPLOAD_CONTENT_TYPES };

/** A content type the service accepts at reservation (the document's enum, UPLOAD_CONTENT_TYPES). */
export type UploadContentType = (typeof UPLOAD_CONTENT_TYPES)[number];

/**
 * The file extensions of each accepted type (decisions.md "Documents": PDF, DOCX, PPTX, XLSX, CSV,
 * TXT, Markdown, HTML, JSON, PNG, JPEG, TIFF). Keyed by every type of the OpenAPI document, so a
 * type the service starts to accept does not compile until its extensions are listed here.
 */
const EXTENSIONS_BY_TYPE: Readonly<Record<UploadContentType, readonly string[]>> = {
  'application/pdf': ['.pdf'],
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': ['.docx'],
  'application/vnd.openxmlformats-officedocument.presentationml.presentation': ['.pptx'],
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': ['.xlsx'],
  'text/csv': ['.csv'],
  'text/plain': ['.txt'],
  'text/markdown': ['.md', '.markdown'],
  'text/html': ['.html', '.htm'],
  'application/json': ['.json'],
  'image/png': ['.png'],
  'image/jpeg': ['.jpg', '.jpeg'],
  'image/tiff': ['.tif', '.tiff'],
};

/**
 * Content type to declare for a file, by extension (lower case, with the dot): the upload types
 * the service accepts. Other extensions give undefined: the helpers skip such files rather than
 * have the service refuse them.
 */
export const CONTENT_TYPE_BY_EXTENSION: Readonly<Record<string, UploadContentType>> = Object.fromEntries(
  UPLOAD_CONTENT_TYPES.flatMap((type) => EXTENSIONS_BY_TYPE[type].map((ext) => [ext, type] as const)),
);

/** The content type for `fileName` by its extension (any case), or undefined when the service does not take it. */
export function contentTypeFor(fileName: string): UploadContentType | undefined {
  const dot = fileName.lastIndexOf('.');
  return dot === -1 ? undefined : CONTENT_TYPE_BY_EXTENSION[fileName.slice(dot).toLowerCase()];
}

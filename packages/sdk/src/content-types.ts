import { EXTENSIONS_BY_TYPE, UPLOAD_CONTENT_TYPES } from './generated/content-types';

export { UPLOAD_CONTENT_TYPES };

/** A content type the service accepts at reservation (the document's enum, UPLOAD_CONTENT_TYPES). */
export type UploadContentType = (typeof UPLOAD_CONTENT_TYPES)[number];

/**
 * Content type to declare for a file, by extension (lower case, with the dot): the upload types
 * the service accepts, with the extensions its OpenAPI document gives for each
 * (`x-kb-file-extensions`, generated into ./generated/content-types.ts). Other extensions give
 * undefined: the helpers skip such files rather than have the service refuse them.
 */
export const CONTENT_TYPE_BY_EXTENSION: Readonly<Record<string, UploadContentType>> = Object.fromEntries(
  UPLOAD_CONTENT_TYPES.flatMap((type) => EXTENSIONS_BY_TYPE[type].map((ext) => [ext, type] as const)),
);

/** The content type for `fileName` by its extension (any case), or undefined when the service does not take it. */
export function contentTypeFor(fileName: string): UploadContentType | undefined {
  const dot = fileName.lastIndexOf('.');
  return dot === -1 ? undefined : CONTENT_TYPE_BY_EXTENSION[fileName.slice(dot).toLowerCase()];
}

/**
 * The extractor of each accepted document format: the only table of ingestion that names formats.
 * Everything else about a format (extensions, aliases, label, text-sized, worker thread) is its row
 * in DOCUMENT_FORMATS (libs/common/src/content-types.ts); this record is keyed by that table's types,
 * so a row without an extractor here does not compile (and index.spec.ts checks the keys at run time).
 * Used by extractDocument (index.ts) and by the extraction worker thread (worker.ts), which runs the
 * same function for the rows with `offThread: true`.
 */
import type { DocumentContentType } from '@kb/common';
import { ExtractionContext } from './context';
import { extractCsv } from './csv';
import { extractDocx } from './docx';
import { extractHtml } from './html';
import { extractImage } from './image';
import { extractJson } from './json';
import { extractMarkdown } from './markdown';
import { extractOdt } from './odt';
import { extractPdf } from './pdf';
import { extractPptx } from './pptx';
import { extractText } from './text';
import { ExtractedDocument } from './types';
import { extractXlsx } from './xlsx';

/** Reads the file at `filePath` into blocks; throws ExtractionError (see extractDocument for the codes). */
export type Extractor = (ctx: ExtractionContext, filePath: string) => Promise<ExtractedDocument>;

/** The extractor of each canonical content type of DOCUMENT_FORMATS. */
export const EXTRACTORS: Readonly<Record<DocumentContentType, Extractor>> = {
  'application/pdf': extractPdf,
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': extractDocx,
  'application/vnd.openxmlformats-officedocument.presentationml.presentation': extractPptx,
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': extractXlsx,
  'text/csv': extractCsv,
  'text/plain': extractText,
  'text/markdown': extractMarkdown,
  'text/html': extractHtml,
  'application/json': extractJson,
  'image/png': extractImage,
  'image/jpeg': extractImage,
  'image/tiff': extractImage,
  'application/vnd.oasis.opendocument.text': extractOdt,
};

/** The extractor of canonical type `type`, or undefined when no format has that type. */
export function extractorFor(type: string): Extractor | undefined {
  return Object.hasOwn(EXTRACTORS, type) ? EXTRACTORS[type as DocumentContentType] : undefined;
}

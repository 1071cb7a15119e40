/**
 * The document formats the service accepts (decisions.md "Documents"): one row per content type,
 * from which every other list is derived: the accepted types (upload check, OpenAPI enum and so the
 * SDK), the extension map (kbctl safety load, web app, tests), the MIME aliases, and ingestion's
 * dispatch (text-size check, worker thread, messages). Ingestion holds the extractor of each type
 * (apps/ingestion/src/extraction/extractors.ts, typed to need one per row). Adding a format: one
 * row here, its extractor there, tests (docs/ingestion.md "Adding a format").
 */
export interface DocumentFormat {
  /** Canonical MIME type, lower case, as stored on the document and listed in the OpenAPI enum. */
  readonly type: string;
  /** File extensions, lower case with the dot (`.md`), that mean this type when uploading from disk. */
  readonly extensions: readonly string[];
  /** Other MIME spellings (lower case) that normalizeContentType maps to `type`. */
  readonly aliases: readonly string[];
  /** What a message to a user calls one such file: "The Word document needs more than …". */
  readonly label: string;
  /** How the list of accepted formats names it ("upload a PDF, Word (.docx), … file"); see {@link ACCEPTED_FORMATS_PHRASE}. */
  readonly listedAs: string;
  /** Formats of one family are listed together under its name: "image (PNG, JPEG, TIFF)". */
  readonly family?: string;
  /** The whole file is text (its size is its text size within a small factor): refused by size before reading. */
  readonly text: boolean;
  /** Parsed by a synchronous JavaScript library: extracted in a worker thread (ingestion off-thread.ts). */
  readonly offThread: boolean;
}

/** The accepted formats, in the order the OpenAPI enum and the messages list them. */
export const DOCUMENT_FORMATS = [
  { type: 'application/pdf', extensions: ['.pdf'], aliases: ['application/x-pdf'], label: 'PDF', listedAs: 'PDF', text: false, offThread: false },
  {
    type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
    extensions: ['.docx'],
    aliases: [],
    label: 'Word document',
    listedAs: 'Word (.docx)',
    text: false,
    offThread: true,
  },
  {
    type: 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
    extensions: ['.pptx'],
    aliases: [],
    label: 'PowerPoint file',
    listedAs: 'PowerPoint (.pptx)',
    text: false,
    offThread: true,
  },
  {
    type: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
    extensions: ['.xlsx'],
    aliases: [],
    label: 'Excel workbook',
    listedAs: 'Excel (.xlsx)',
    text: false,
    offThread: true,
  },
  { type: 'text/csv', extensions: ['.csv'], aliases: ['application/csv'], label: 'CSV file', listedAs: 'CSV', text: true, offThread: false },
  { type: 'text/plain', extensions: ['.txt'], aliases: [], label: 'text file', listedAs: 'text', text: true, offThread: false },
  {
    type: 'text/markdown',
    extensions: ['.md', '.markdown'],
    aliases: ['text/x-markdown'],
    label: 'Markdown file',
    listedAs: 'Markdown',
    text: true,
    offThread: false,
  },
  { type: 'text/html', extensions: ['.html', '.htm'], aliases: [], label: 'HTML page', listedAs: 'HTML', text: true, offThread: true },
  { type: 'application/json', extensions: ['.json'], aliases: [], label: 'JSON file', listedAs: 'JSON', text: true, offThread: false },
  { type: 'image/png', extensions: ['.png'], aliases: [], label: 'PNG image', listedAs: 'PNG', family: 'image', text: false, offThread: false },
  {
    type: 'image/jpeg',
    extensions: ['.jpg', '.jpeg'],
    aliases: ['image/jpg'],
    label: 'JPEG image',
    listedAs: 'JPEG',
    family: 'image',
    text: false,
    offThread: false,
  },
  {
    type: 'image/tiff',
    extensions: ['.tif', '.tiff'],
    aliases: ['image/tif'],
    label: 'TIFF image',
    listedAs: 'TIFF',
    family: 'image',
    text: false,
    offThread: false,
  },
  {
    type: 'application/vnd.oasis.opendocument.text',
    extensions: ['.odt'],
    aliases: [],
    label: 'OpenDocument text',
    listedAs: 'OpenDocument text (.odt)',
    text: false,
    offThread: true,
  },
] as const satisfies readonly DocumentFormat[];

/** A canonical accepted content type (the `type` of a {@link DOCUMENT_FORMATS} row). */
export type DocumentContentType = (typeof DOCUMENT_FORMATS)[number]['type'];

/** The canonical accepted content types whose row has `offThread: true`. */
export type OffThreadContentType = Extract<(typeof DOCUMENT_FORMATS)[number], { offThread: true }>['type'];

/** Content types the service accepts for upload, canonical spelling, in {@link DOCUMENT_FORMATS} order. */
export const ACCEPTED_CONTENT_TYPES: readonly DocumentContentType[] = Object.freeze(DOCUMENT_FORMATS.map((f) => f.type));

/** The format row of each accepted canonical type. */
const FORMAT_BY_TYPE: ReadonlyMap<string, DocumentFormat> = new Map(DOCUMENT_FORMATS.map((f) => [f.type, f]));

/** The row of `type` (canonical spelling, as normalizeContentType gives it), or undefined when not accepted. */
export function documentFormat(type: string): DocumentFormat | undefined {
  return FORMAT_BY_TYPE.get(type);
}

/**
 * Content type of an accepted upload by file extension (lower case, with the dot), for clients
 * that upload files from disk (kbctl safety load, tests, scripts).
 */
export const CONTENT_TYPE_BY_EXTENSION: Readonly<Record<string, DocumentContentType>> = Object.freeze(
  Object.fromEntries(DOCUMENT_FORMATS.flatMap((f) => f.extensions.map((ext) => [ext, f.type]))),
);

/**
 * The extensions of each accepted type, as the OpenAPI document publishes them (`x-kb-file-extensions`
 * on the reservation's `content_type`) for clients such as the SDK to map files to types.
 */
export const EXTENSIONS_BY_CONTENT_TYPE: Readonly<Record<DocumentContentType, readonly string[]>> = Object.freeze(
  Object.fromEntries(DOCUMENT_FORMATS.map((f): [string, readonly string[]] => [f.type, f.extensions])) as Record<DocumentContentType, readonly string[]>,
);

/** The accepted content type of a file name by its extension (any case), or undefined. */
export function contentTypeForFile(fileName: string): DocumentContentType | undefined {
  const dot = fileName.lastIndexOf('.');
  return dot === -1 ? undefined : CONTENT_TYPE_BY_EXTENSION[fileName.slice(dot).toLowerCase()];
}

const ALIASES: ReadonlyMap<string, string> = new Map(DOCUMENT_FORMATS.flatMap((f) => f.aliases.map((alias) => [alias, f.type] as const)));

/**
 * Normalises a MIME type for comparison: lowercase, parameters (`; charset=…`) dropped, the
 * aliases of {@link DOCUMENT_FORMATS} mapped to the canonical type. Returns '' for empty input.
 */
export function normalizeContentType(value: string | null | undefined): string {
  const base = (value ?? '').split(';')[0].trim().toLowerCase();
  return ALIASES.get(base) ?? base;
}

/** Whether `value` (after normalisation) is an accepted upload type. */
export function isAcceptedContentType(value: string): boolean {
  return FORMAT_BY_TYPE.has(normalizeContentType(value));
}

/**
 * The accepted formats as a phrase for messages, in {@link DOCUMENT_FORMATS} order, each by its
 * `listedAs`, a family's members grouped under its name: "PDF, Word (.docx), PowerPoint (.pptx),
 * Excel (.xlsx), CSV, text, Markdown, HTML, JSON, image (PNG, JPEG, TIFF) or OpenDocument text (.odt)".
 */
export const ACCEPTED_FORMATS_PHRASE: string = (() => {
  const groups: Array<{ family?: string; names: string[] }> = [];
  for (const f of DOCUMENT_FORMATS as readonly DocumentFormat[]) {
    const group = f.family === undefined ? undefined : groups.find((g) => g.family === f.family);
    if (group) group.names.push(f.listedAs);
    else groups.push({ family: f.family, names: [f.listedAs] });
  }
  const named = groups.map((g) => (g.family === undefined ? g.names[0] : `${g.family} (${g.names.join(', ')})`));
  return named.length > 1 ? `${named.slice(0, -1).join(', ')} or ${named[named.length - 1]}` : named.join('');
})();

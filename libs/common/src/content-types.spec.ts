import {
  ACCEPTED_CONTENT_TYPES,
  ACCEPTED_FORMATS_PHRASE,
  CONTENT_TYPE_BY_EXTENSION,
  contentTypeForFile,
  DOCUMENT_FORMATS,
  documentFormat,
  EXTENSIONS_BY_CONTENT_TYPE,
  isAcceptedContentType,
  normalizeContentType,
} from './content-types';

describe('the document formats table and the lists derived from it', () => {
  it('accepts the twelve types of decisions.md, in the order the API lists them, and ODT after them (docs/ingestion.md "Formats")', () => {
    expect(ACCEPTED_CONTENT_TYPES).toEqual([
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
      'application/vnd.oasis.opendocument.text',
    ]);
  });

  it('maps each file extension, in any case, to one type', () => {
    expect(contentTypeForFile('Policy.MD')).toBe('text/markdown');
    expect(contentTypeForFile('notes.markdown')).toBe('text/markdown');
    expect(contentTypeForFile('scan.JPG')).toBe('image/jpeg');
    expect(contentTypeForFile('page.htm')).toBe('text/html');
    expect(contentTypeForFile('Plan.ODT')).toBe('application/vnd.oasis.opendocument.text');
    expect(contentTypeForFile('legacy.doc')).toBeUndefined();
    expect(contentTypeForFile('README')).toBeUndefined();
    const extensions = DOCUMENT_FORMATS.flatMap((f) => [...f.extensions]);
    expect(Object.keys(CONTENT_TYPE_BY_EXTENSION).sort()).toEqual([...extensions].sort());
    expect(new Set(extensions).size).toBe(extensions.length);
    for (const ext of extensions) expect(ext).toMatch(/^\.[a-z0-9]+$/);
    expect(EXTENSIONS_BY_CONTENT_TYPE['image/tiff']).toEqual(['.tif', '.tiff']);
  });

  it('normalises case, parameters and aliases to the canonical type, and nothing else', () => {
    expect(normalizeContentType('Text/HTML; charset=UTF-8')).toBe('text/html');
    expect(normalizeContentType('image/jpg')).toBe('image/jpeg');
    expect(normalizeContentType('application/x-pdf')).toBe('application/pdf');
    expect(normalizeContentType('application/csv')).toBe('text/csv');
    expect(normalizeContentType('application/msword')).toBe('application/msword');
    expect(normalizeContentType(undefined)).toBe('');
    expect(isAcceptedContentType('TEXT/X-MARKDOWN')).toBe(true);
    expect(isAcceptedContentType('application/msword')).toBe(false);
    const aliases = DOCUMENT_FORMATS.flatMap((f) => [...f.aliases]);
    for (const alias of aliases) expect(ACCEPTED_CONTENT_TYPES).not.toContain(alias);
    expect(new Set(aliases).size).toBe(aliases.length);
  });

  it('names the formats for messages', () => {
    expect(ACCEPTED_FORMATS_PHRASE).toBe(
      'PDF, Word (.docx), PowerPoint (.pptx), Excel (.xlsx), CSV, text, Markdown, HTML, JSON, image (PNG, JPEG, TIFF) or OpenDocument text (.odt)',
    );
    expect(documentFormat('application/vnd.openxmlformats-officedocument.spreadsheetml.sheet')?.label).toBe('Excel workbook');
    expect(documentFormat('application/msword')).toBeUndefined();
  });
});

import { ACCEPTED_CONTENT_TYPES, DOCUMENT_FORMATS } from '@kb/common';
import { extractorFor } from './extractors';
import { extractDocument, ExtractionError, normalizeContentType, SUPPORTED_CONTENT_TYPES } from './index';
import { corpus } from './testing/corpus';

describe('extractDocument dispatch', () => {
  it('has an extractor for exactly the content types uploads accept (one per DOCUMENT_FORMATS row)', () => {
    expect([...SUPPORTED_CONTENT_TYPES].sort()).toEqual([...ACCEPTED_CONTENT_TYPES].sort());
    for (const format of DOCUMENT_FORMATS) expect([format.type, typeof extractorFor(format.type)]).toEqual([format.type, 'function']);
    expect(extractorFor('application/msword')).toBeUndefined();
    expect(extractorFor('toString')).toBeUndefined();
  });

  it('normalises parameters, case and common aliases', () => {
    expect(normalizeContentType('Text/HTML; charset=UTF-8')).toBe('text/html');
    expect(normalizeContentType('image/jpg')).toBe('image/jpeg');
    expect(normalizeContentType('text/x-markdown')).toBe('text/markdown');
  });

  it('rejects other types with UNSUPPORTED_TYPE and a list of what is accepted', async () => {
    const error = (await extractDocument(corpus('pdf/OSHA2001.pdf'), 'application/msword').catch((e: unknown) => e)) as ExtractionError;
    expect(error).toBeInstanceOf(ExtractionError);
    expect(error.code).toBe('UNSUPPORTED_TYPE');
    expect(error.message).toBe(
      'Files of type "application/msword" cannot be processed; upload a PDF, Word (.docx), PowerPoint (.pptx), Excel (.xlsx), CSV, text, Markdown, HTML, JSON, image (PNG, JPEG, TIFF) or OpenDocument text (.odt) file.',
    );
  });

  it('passes file-system errors through unchanged', async () => {
    await expect(extractDocument('/nonexistent/file.txt', 'text/plain')).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

import { ACCEPTED_CONTENT_TYPES } from '@kb/common';
import { extractDocument, ExtractionError, normalizeContentType, SUPPORTED_CONTENT_TYPES } from './index';
import { corpus } from './testing/corpus';

describe('extractDocument dispatch', () => {
  it('has an extractor for exactly the content types uploads accept', () => {
    expect([...SUPPORTED_CONTENT_TYPES].sort()).toEqual([...ACCEPTED_CONTENT_TYPES].sort());
    expect(SUPPORTED_CONTENT_TYPES).toHaveLength(12);
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
    expect(error.message).toMatch(/upload a PDF, Word \(\.docx\)/);
  });

  it('passes file-system errors through unchanged', async () => {
    await expect(extractDocument('/nonexistent/file.txt', 'text/plain')).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

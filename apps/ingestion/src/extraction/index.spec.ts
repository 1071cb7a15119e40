import { extractDocument, ExtractionError, normalizeContentType, SUPPORTED_CONTENT_TYPES } from './index';
import { corpus } from './testing/corpus';

describe('extractDocument dispatch', () => {
  it('supports the twelve upload types', () => {
    expect([...SUPPORTED_CONTENT_TYPES].sort()).toEqual(
      [
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
      ].sort(),
    );
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

import { CONTENT_TYPE_BY_EXTENSION as SERVICE_EXTENSIONS, ACCEPTED_CONTENT_TYPES } from '@kb/common';
import { CONTENT_TYPE_BY_EXTENSION, contentTypeFor, UPLOAD_CONTENT_TYPES } from './content-types';

describe('the upload content types, generated from the OpenAPI document', () => {
  it('are the types and file extensions the service accepts (its DOCUMENT_FORMATS), none copied by hand', () => {
    expect(UPLOAD_CONTENT_TYPES).toEqual(ACCEPTED_CONTENT_TYPES);
    expect(CONTENT_TYPE_BY_EXTENSION).toEqual(SERVICE_EXTENSIONS);
  });

  it('give a file its type by extension, in any case, and none to a file the service refuses', () => {
    expect(contentTypeFor('Site Plan.PDF')).toBe('application/pdf');
    expect(contentTypeFor('notes.markdown')).toBe('text/markdown');
    expect(contentTypeFor('photo.jpeg')).toBe('image/jpeg');
    expect(contentTypeFor('legacy.doc')).toBeUndefined();
    expect(contentTypeFor('Makefile')).toBeUndefined();
  });
});

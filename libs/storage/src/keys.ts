import { StorageError } from './errors';

/** Longest key accepted, in UTF-8 bytes (the S3 limit). */
export const MAX_KEY_BYTES = 1024;
/** Longest presigned URL lifetime, in seconds (the S3 SigV4 limit: 7 days). */
export const MAX_EXPIRES_SECONDS = 604_800;
/** Prefix of the local driver's in-progress upload files; rejected as a key segment. */
export const TEMP_PREFIX = '.kb-tmp-';

/**
 * Validates an object key and returns it unchanged. Keys are relative `/`-separated paths.
 * @throws StorageError INVALID_KEY when the key is empty, longer than 1024 bytes, starts or ends
 *   with `/`, has an empty, `.` or `..` segment, contains a backslash, NUL or another control
 *   character, or a segment starting with the reserved `.kb-tmp-` prefix.
 */
export function assertValidKey(key: unknown): string {
  if (typeof key !== 'string' || key.length === 0) throw invalidKey('empty key');
  if (Buffer.byteLength(key, 'utf8') > MAX_KEY_BYTES) throw invalidKey(`key longer than ${MAX_KEY_BYTES} bytes`);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(key)) throw invalidKey('control character or NUL in key');
  if (key.includes('\\')) throw invalidKey('backslash in key');
  if (key.startsWith('/')) throw invalidKey('absolute key');
  for (const segment of key.split('/')) {
    if (segment === '') throw invalidKey('empty path segment in key');
    if (segment === '.' || segment === '..') throw invalidKey(`"${segment}" segment in key`);
    if (segment.startsWith(TEMP_PREFIX)) throw invalidKey(`reserved segment prefix ${TEMP_PREFIX}`);
  }
  return key;
}

function invalidKey(why: string): StorageError {
  return new StorageError('INVALID_KEY', `Invalid object key: ${why}`);
}

/** @throws StorageError INVALID_ARGUMENT unless 1 <= seconds <= 604800 (integer). */
export function assertExpiry(seconds: unknown): number {
  if (typeof seconds !== 'number' || !Number.isInteger(seconds) || seconds < 1 || seconds > MAX_EXPIRES_SECONDS) {
    throw new StorageError('INVALID_ARGUMENT', `expiresInSeconds must be an integer from 1 to ${MAX_EXPIRES_SECONDS}`);
  }
  return seconds;
}

/** @throws StorageError INVALID_ARGUMENT when `value` is not a non-empty string free of CR/LF/NUL. */
export function assertHeaderText(name: string, value: unknown): string {
  // eslint-disable-next-line no-control-regex
  if (typeof value !== 'string' || value.trim() === '' || /[\u0000\r\n]/.test(value)) {
    throw new StorageError('INVALID_ARGUMENT', `${name} must be a non-empty single-line string`);
  }
  return value;
}

/**
 * Normalises a Content-Type header value for storage and comparison: media type only,
 * lowercase, trimmed (`"Application/PDF; charset=binary"` → `"application/pdf"`).
 * Returns `null` for a missing or empty value.
 */
export function normalizeContentType(value: string | string[] | null | undefined): string | null {
  const raw = Array.isArray(value) ? value[0] : value;
  if (raw == null) return null;
  const media = raw.split(';', 1)[0].trim().toLowerCase();
  return media === '' ? null : media;
}

/**
 * `Content-Disposition` value for a download: `attachment; filename="<ASCII fallback>";
 * filename*=UTF-8''<RFC 8187 percent-encoded name>`. The fallback replaces non-ASCII, quotes,
 * backslashes and control characters with `_`.
 */
export function contentDisposition(fileName: string): string {
  const fallback = fileName.replace(/[^\u0020-\u007e]|["\\%]/g, '_');
  const encoded = encodeURIComponent(fileName).replace(/['()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}

import { CodedError } from '@kb/common';

/**
 * Error codes raised by the storage library.
 *
 * - `NOT_FOUND`: the object does not exist (only from {@link ObjectStorage.downloadToFile};
 *   `stat` returns `null` and `delete` succeeds instead).
 * - `INVALID_KEY`: the key is empty, too long, absolute, contains `..`/`.`/empty segments,
 *   backslashes, NUL or other control characters.
 * - `INVALID_ARGUMENT`: a bad option (expiry out of 1..604800 s, empty content type or file name).
 * - `INVALID_CONFIG`: the driver configuration is unusable (thrown by constructors / factory).
 * - `UNAVAILABLE`: the backend cannot be reached or used (connection refused, timeout, disk error).
 * - `ACCESS_DENIED`: the backend rejected our credentials (S3 `AccessDenied`, `InvalidAccessKeyId`,
 *   `SignatureDoesNotMatch`): a configuration problem, not a client error.
 * - `PRECONDITION_FAILED`: the object changed since it was checked ({@link ObjectStorage.move}
 *   with `ifEtag`: another upload replaced it).
 * - `INTERNAL`: anything else the backend answered that we do not understand.
 */
export type StorageErrorCode =
  'NOT_FOUND' | 'INVALID_KEY' | 'INVALID_ARGUMENT' | 'INVALID_CONFIG' | 'UNAVAILABLE' | 'ACCESS_DENIED' | 'PRECONDITION_FAILED' | 'INTERNAL';

/**
 * The one error type thrown by this library. `code` is stable and meant for mapping
 * (e.g. `NOT_FOUND` → 404, `UNAVAILABLE` → 503); `message` is for logs, not for API clients.
 * `cause` carries the underlying error when there is one.
 */
export class StorageError extends CodedError<StorageErrorCode> {
  override readonly name = 'StorageError';
}

/** True when `err` is a {@link StorageError}, optionally with the given code. */
export function isStorageError(err: unknown, code?: StorageErrorCode): err is StorageError {
  return err instanceof StorageError && (code === undefined || err.code === code);
}

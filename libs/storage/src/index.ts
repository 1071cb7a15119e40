export { StorageError, isStorageError, type StorageErrorCode } from './errors';
export type { ObjectInfo, ObjectStorage, PresignedUrl, PresignGetOptions, PresignPutOptions } from './types';
export { normalizeContentType, contentDisposition, assertValidKey, MAX_EXPIRES_SECONDS } from './keys';
export { LocalObjectStorage, createLocalStorageHandler, LOCAL_QUERY, type LocalStorageConfig } from './local-object-storage';
export { S3ObjectStorage, type S3StorageConfig } from './s3-object-storage';
export { createObjectStorage, type ObjectStorageConfig } from './create-object-storage';

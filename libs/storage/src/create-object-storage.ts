import { StorageError } from './errors';
import { LocalObjectStorage, type LocalStorageConfig } from './local-object-storage';
import { S3ObjectStorage, type S3StorageConfig } from './s3-object-storage';
import type { ObjectStorage } from './types';

/** Driver selection for {@link createObjectStorage}. */
export type ObjectStorageConfig = { driver: 'local'; local: LocalStorageConfig } | { driver: 's3'; s3: S3StorageConfig };

/**
 * Builds the configured driver. Does not touch the backend: call `ensureReady()` at boot.
 * The gateway also needs the {@link LocalObjectStorage} instance itself (for
 * `createLocalStorageHandler`) when `driver` is `local`: narrow with `storage.driver === 'local'`
 * and `instanceof LocalObjectStorage`.
 * @throws StorageError INVALID_CONFIG for an unknown driver or an unusable driver config.
 */
export function createObjectStorage(config: ObjectStorageConfig): ObjectStorage {
  switch (config?.driver) {
    case 'local':
      return new LocalObjectStorage(config.local);
    case 's3':
      return new S3ObjectStorage(config.s3);
    default:
      throw new StorageError('INVALID_CONFIG', `unknown storage driver: ${String((config as { driver?: unknown })?.driver)} (expected local or s3)`);
  }
}

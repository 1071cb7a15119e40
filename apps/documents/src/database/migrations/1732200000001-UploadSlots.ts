import { sqlMigration } from '@kb/common';

/**
 * Upload slots separate from the processed original (issue 15, defect 1): `documents.upload_key`
 * is the per-reservation key the presigned PUT writes (null for documents reserved before, whose
 * upload went to `storage_key` directly); `closed_uploads` lists upload keys whose presigned URLs
 * may still be used by a late PUT (S3 cannot revoke them) and are deleted after `delete_after`.
 */
export const UploadSlots1732200000001 = sqlMigration('UploadSlots1732200000001', {
  up: [
    `ALTER TABLE documents ADD COLUMN upload_key text NULL`,
    `
      CREATE TABLE closed_uploads (
        storage_key text PRIMARY KEY,
        delete_after timestamptz NOT NULL
      )`,
    `CREATE INDEX closed_uploads_delete_after_idx ON closed_uploads (delete_after)`,
  ],
  down: [`DROP TABLE closed_uploads`, `ALTER TABLE documents DROP COLUMN upload_key`],
});

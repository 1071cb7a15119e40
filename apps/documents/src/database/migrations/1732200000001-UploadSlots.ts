import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Upload slots separate from the processed original (issue 15, defect 1): `documents.upload_key`
 * is the per-reservation key the presigned PUT writes (null for documents reserved before, whose
 * upload went to `storage_key` directly); `closed_uploads` lists upload keys whose presigned URLs
 * may still be used by a late PUT (S3 cannot revoke them) and are deleted after `delete_after`.
 */
export class UploadSlots1732200000001 implements MigrationInterface {
  name = 'UploadSlots1732200000001';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE documents ADD COLUMN upload_key text NULL`);
    await q.query(`
      CREATE TABLE closed_uploads (
        storage_key text PRIMARY KEY,
        delete_after timestamptz NOT NULL
      )`);
    await q.query(`CREATE INDEX closed_uploads_delete_after_idx ON closed_uploads (delete_after)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE closed_uploads`);
    await q.query(`ALTER TABLE documents DROP COLUMN upload_key`);
  }
}

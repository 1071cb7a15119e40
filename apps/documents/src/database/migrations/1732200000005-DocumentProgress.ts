import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Processing progress of documents (issue 17, decisions.md "Document processing progress"):
 * `progress` `{ stage, pagesDone, pagesTotal }` while a document is processing or ready, null
 * otherwise; `progress_at` is the time of the event that set it, so a late event never overwrites
 * a newer state.
 */
export class DocumentProgress1732200000005 implements MigrationInterface {
  name = 'DocumentProgress1732200000005';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE documents ADD COLUMN progress jsonb NULL, ADD COLUMN progress_at timestamptz NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE documents DROP COLUMN progress, DROP COLUMN progress_at`);
  }
}

import { sqlMigration } from '@kb/common';

/**
 * Processing progress of documents (issue 17, decisions.md "Document processing progress"):
 * `progress` `{ stage, pagesDone, pagesTotal }` while a document is processing or ready, null
 * otherwise; `progress_at` is the time of the event that set it, so a late event never overwrites
 * a newer state.
 */
export const DocumentProgress1732200000005 = sqlMigration('DocumentProgress1732200000005', {
  up: [`ALTER TABLE documents ADD COLUMN progress jsonb NULL, ADD COLUMN progress_at timestamptz NULL`],
  down: [`ALTER TABLE documents DROP COLUMN progress, DROP COLUMN progress_at`],
});

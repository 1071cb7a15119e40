import { sqlMigration } from '@kb/common';

/**
 * Page sizes of PDFs (decisions.md "Where a quote stands"): `[{ page, width, height }]` in points,
 * recorded from ingestion's status event; served by `GET /api/v2/documents/{id}/pages/{n}`. Null for
 * formats without pages and for documents processed before sizes were recorded (reprocess them).
 */
export const DocumentPageSizes1764800000000 = sqlMigration('DocumentPageSizes1764800000000', {
  up: [`ALTER TABLE documents ADD COLUMN page_sizes jsonb NULL`],
  down: [`ALTER TABLE documents DROP COLUMN page_sizes`],
});

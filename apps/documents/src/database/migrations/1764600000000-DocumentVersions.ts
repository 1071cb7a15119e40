import { sqlMigration } from '@kb/common';

/**
 * Document versions (decisions.md "Document versions", docs/retrieval.md "Document versions: one
 * switch point"): `version` (1 for a first upload), `replaces` (the previous version) and
 * `superseded_by` (the next version, set in the transaction that makes it ready). Indexes serve
 * the chain walks (`replaces` → pending replacements, `superseded_by` → predecessor) and the scope
 * read of every search (the org's not-current documents).
 */
export const DocumentVersions1764600000000 = sqlMigration('DocumentVersions1764600000000', {
  up: [
    `ALTER TABLE documents ADD COLUMN version integer NOT NULL DEFAULT 1, ADD COLUMN replaces uuid NULL, ADD COLUMN superseded_by uuid NULL`,
    `CREATE INDEX documents_replaces_idx ON documents (org_id, replaces) WHERE replaces IS NOT NULL`,
    `CREATE INDEX documents_superseded_by_idx ON documents (org_id, superseded_by) WHERE superseded_by IS NOT NULL`,
    `CREATE INDEX documents_not_current_idx ON documents (org_id, project_id) WHERE superseded_by IS NOT NULL OR status NOT IN ('ready', 'completed')`,
  ],
  down: [
    `DROP INDEX documents_not_current_idx`,
    `DROP INDEX documents_superseded_by_idx`,
    `DROP INDEX documents_replaces_idx`,
    `ALTER TABLE documents DROP COLUMN version, DROP COLUMN replaces, DROP COLUMN superseded_by`,
  ],
});

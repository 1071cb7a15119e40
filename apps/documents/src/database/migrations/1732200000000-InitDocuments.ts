import { sqlMigration } from '@kb/common';

/** Projects and documents tables of the documents service (schema `documents`). */
export const InitDocuments1732200000000 = sqlMigration('InitDocuments1732200000000', {
  up: [
    `
      CREATE TABLE projects (
        id uuid PRIMARY KEY,
        org_id text NOT NULL,
        name varchar(200) NOT NULL,
        description text NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL
      )`,
    `CREATE INDEX projects_org_created_idx ON projects (org_id, created_at DESC, id DESC)`,
    `
      CREATE TABLE documents (
        id uuid PRIMARY KEY,
        org_id text NOT NULL,
        project_id uuid NULL REFERENCES projects(id) ON DELETE RESTRICT,
        file_name varchar(500) NOT NULL,
        content_type text NOT NULL,
        declared_size_bytes bigint NOT NULL,
        size_bytes bigint NULL,
        status text NOT NULL,
        chunk_count integer NULL,
        page_count integer NULL,
        error_message text NULL,
        storage_key text NOT NULL,
        processing_started_at timestamptz NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        CONSTRAINT documents_status_chk CHECK (status IN ('awaiting_upload','processing','ready','completed','failed'))
      )`,
    `CREATE INDEX documents_org_created_idx ON documents (org_id, created_at DESC, id DESC)`,
    `CREATE INDEX documents_project_idx ON documents (project_id)`,
    `CREATE INDEX documents_processing_idx ON documents (processing_started_at) WHERE status = 'processing'`,
  ],
  down: [`DROP TABLE documents`, `DROP TABLE projects`],
});

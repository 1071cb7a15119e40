import { sqlMigration } from '@kb/common';

/** Batch queries and their questions (schema `agent`). */
export const InitBatches1732300000000 = sqlMigration('InitBatches1732300000000', {
  up: [
    `
      CREATE TABLE batches (
        id uuid PRIMARY KEY,
        org_id text NOT NULL,
        name varchar(200) NULL,
        project_id uuid NULL,
        chat_type text NULL,
        safety_assistant_enabled boolean NOT NULL,
        status text NOT NULL,
        total_questions integer NOT NULL,
        processed_questions integer NOT NULL DEFAULT 0,
        failed_questions integer NOT NULL DEFAULT 0,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        CONSTRAINT batches_status_chk CHECK (status IN ('pending','processing','completed','failed'))
      )`,
    `CREATE INDEX batches_org_created_idx ON batches (org_id, created_at DESC, id DESC)`,
    `
      CREATE TABLE batch_questions (
        batch_id uuid NOT NULL REFERENCES batches(id) ON DELETE CASCADE,
        idx integer NOT NULL,
        question text NOT NULL,
        status text NOT NULL,
        answer text NULL,
        citations jsonb NOT NULL DEFAULT '[]',
        agent text NULL,
        error text NULL,
        updated_at timestamptz NOT NULL,
        PRIMARY KEY (batch_id, idx),
        CONSTRAINT batch_questions_status_chk CHECK (status IN ('pending','completed','failed'))
      )`,
  ],
  down: ['DROP TABLE batch_questions', 'DROP TABLE batches'],
});

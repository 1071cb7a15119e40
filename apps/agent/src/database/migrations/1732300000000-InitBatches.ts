import { MigrationInterface, QueryRunner } from 'typeorm';

/** Batch queries and their questions (schema `agent`). */
export class InitBatches1732300000000 implements MigrationInterface {
  name = 'InitBatches1732300000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
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
      )`);
    await q.query(`CREATE INDEX batches_org_created_idx ON batches (org_id, created_at DESC, id DESC)`);
    await q.query(`
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
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE batch_questions');
    await q.query('DROP TABLE batches');
  }
}

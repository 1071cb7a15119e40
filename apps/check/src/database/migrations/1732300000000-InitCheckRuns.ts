import { sqlMigration } from '@kb/common';

/**
 * Check runs, their requirements and sub-requirements (schema `check`). Every table carries
 * `org_id` and every query filters by it. Run counters are derived from the requirement rows
 * inside the transaction that completes a requirement (see RunsRepository.completeRequirement).
 */
export const InitCheckRuns1732300000000 = sqlMigration('InitCheckRuns1732300000000', {
  up: [
    `
      CREATE TABLE check_runs (
        id uuid PRIMARY KEY,
        org_id text NOT NULL,
        project_id uuid NOT NULL,
        name varchar(500) NOT NULL,
        status text NOT NULL,
        handbook_ids uuid[] NOT NULL DEFAULT '{}',
        total_requirements integer NOT NULL,
        processed_requirements integer NOT NULL DEFAULT 0,
        passed_requirements integer NOT NULL DEFAULT 0,
        failed_requirements integer NOT NULL DEFAULT 0,
        generation integer NOT NULL DEFAULT 0,
        task_id text NULL,
        skip_breakdown boolean NOT NULL DEFAULT false,
        error_message text NULL,
        processing_started_at timestamptz NULL,
        processing_completed_at timestamptz NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        CONSTRAINT check_runs_status_chk CHECK (status IN ('pending','processing','completed','stopped','failed'))
      )`,
    `CREATE INDEX check_runs_org_created_idx ON check_runs (org_id, created_at DESC, id DESC)`,
    `CREATE INDEX check_runs_org_project_idx ON check_runs (org_id, project_id, created_at DESC)`,
    `
      CREATE TABLE check_requirements (
        id uuid PRIMARY KEY,
        run_id uuid NOT NULL REFERENCES check_runs(id) ON DELETE CASCADE,
        org_id text NOT NULL,
        order_index integer NOT NULL,
        text text NOT NULL,
        metadata jsonb NULL,
        status text NOT NULL,
        passed boolean NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        CONSTRAINT check_requirements_status_chk CHECK (status IN ('pending','processing','completed')),
        CONSTRAINT check_requirements_order_uq UNIQUE (run_id, order_index)
      )`,
    `CREATE INDEX check_requirements_run_status_idx ON check_requirements (run_id, status)`,
    `
      CREATE TABLE check_sub_requirements (
        id uuid PRIMARY KEY,
        requirement_id uuid NOT NULL REFERENCES check_requirements(id) ON DELETE CASCADE,
        run_id uuid NOT NULL,
        org_id text NOT NULL,
        order_index integer NOT NULL,
        text text NOT NULL,
        justification text NOT NULL DEFAULT '',
        score double precision NOT NULL DEFAULT 0,
        status text NOT NULL,
        verdict text NULL,
        sources jsonb NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        CONSTRAINT check_sub_requirements_status_chk CHECK (status IN ('comply','not-comply','pending'))
      )`,
    `CREATE INDEX check_sub_requirements_req_idx ON check_sub_requirements (requirement_id, order_index)`,
    `CREATE INDEX check_sub_requirements_run_idx ON check_sub_requirements (run_id)`,
  ],
  down: [`DROP TABLE check_sub_requirements`, `DROP TABLE check_requirements`, `DROP TABLE check_runs`],
});

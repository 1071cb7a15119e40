import { sqlMigration } from '@kb/common';

/**
 * `source_run_id` of a check run (decisions.md "Re-running and comparing check runs"): the run it
 * re-runs, NULL for a run created directly. Runs are never deleted today; should one be, its reruns
 * keep existing and lose the link (ON DELETE SET NULL).
 */
export const RunSourceRun1764600000000 = sqlMigration('RunSourceRun1764600000000', {
  up: [`ALTER TABLE check_runs ADD COLUMN source_run_id uuid NULL REFERENCES check_runs(id) ON DELETE SET NULL`],
  down: [`ALTER TABLE check_runs DROP COLUMN source_run_id`],
});

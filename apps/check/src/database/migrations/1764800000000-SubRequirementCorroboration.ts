import { sqlMigration } from '@kb/common';

/**
 * Run-level corroboration (docs/check.md "The run-level reading", run-corroboration.ts): each
 * sub-requirement keeps its single verdict (`judge_verdict`, `judge_score`, `judge_justification`), the embedded
 * judge's P(COMPLIANT) (`p_compliant`, NULL for a chat model) and what a corroborating run shows instead
 * (`corroborated_justification`, NULL when the verdict may not be raised), so that a run's completion sets `verdict`,
 * `status`, `score` and `justification` from them whenever it completes (a re-trigger recomputes them). Rows written
 * before this migration keep all five NULL and are never changed.
 */
export const SubRequirementCorroboration1764800000000 = sqlMigration('SubRequirementCorroboration1764800000000', {
  up: [
    `ALTER TABLE check_sub_requirements ADD COLUMN judge_score float8 NULL, ADD COLUMN judge_justification text NULL, ADD COLUMN judge_verdict text NULL,
     ADD COLUMN p_compliant float8 NULL, ADD COLUMN corroborated_justification text NULL`,
  ],
  down: [
    `ALTER TABLE check_sub_requirements DROP COLUMN judge_score, DROP COLUMN judge_justification, DROP COLUMN judge_verdict, DROP COLUMN p_compliant, DROP COLUMN corroborated_justification`,
  ],
});

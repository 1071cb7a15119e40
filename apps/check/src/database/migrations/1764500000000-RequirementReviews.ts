import { sqlMigration } from '@kb/common';

/**
 * A person's review of a requirement's machine result (decisions.md "Review of check results"),
 * stored as columns of `check_requirements` (one review per requirement; replacing it overwrites
 * the columns). `review_decision` NULL means "not reviewed" and the other review columns are then
 * NULL/false. `review_outdated` turns true when the worker stores a new result for a requirement
 * that has a review (RunsRepository.complete).
 */
export const RequirementReviews1764500000000 = sqlMigration('RequirementReviews1764500000000', {
  up: [
    `ALTER TABLE check_requirements
       ADD COLUMN review_decision text NULL,
       ADD COLUMN review_comment text NULL,
       ADD COLUMN review_reviewer text NULL,
       ADD COLUMN reviewed_at timestamptz NULL,
       ADD COLUMN review_outdated boolean NOT NULL DEFAULT false,
       ADD CONSTRAINT check_requirements_review_decision_chk CHECK (review_decision IN ('pass','fail')),
       ADD CONSTRAINT check_requirements_review_complete_chk CHECK (
         (review_decision IS NULL AND review_reviewer IS NULL AND reviewed_at IS NULL AND review_comment IS NULL)
         OR (review_decision IS NOT NULL AND review_reviewer IS NOT NULL AND reviewed_at IS NOT NULL))`,
  ],
  down: [
    `ALTER TABLE check_requirements
       DROP CONSTRAINT check_requirements_review_complete_chk,
       DROP CONSTRAINT check_requirements_review_decision_chk,
       DROP COLUMN review_outdated,
       DROP COLUMN reviewed_at,
       DROP COLUMN review_reviewer,
       DROP COLUMN review_comment,
       DROP COLUMN review_decision`,
  ],
});

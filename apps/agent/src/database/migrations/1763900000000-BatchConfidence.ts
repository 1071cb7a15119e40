import { sqlMigration } from '@kb/common';

/** Each answered batch question keeps the answer's calibrated confidence (decisions.md "Answerability"). */
export const BatchConfidence1763900000000 = sqlMigration('BatchConfidence1763900000000', {
  up: [`ALTER TABLE batch_questions ADD COLUMN confidence double precision NULL`],
  down: [`ALTER TABLE batch_questions DROP COLUMN confidence`],
});

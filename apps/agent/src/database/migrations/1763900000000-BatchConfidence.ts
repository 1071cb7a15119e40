import { MigrationInterface, QueryRunner } from 'typeorm';

/** Each answered batch question keeps the answer's calibrated confidence (decisions.md "Answerability"). */
export class BatchConfidence1763900000000 implements MigrationInterface {
  name = 'BatchConfidence1763900000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE batch_questions ADD COLUMN confidence double precision NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE batch_questions DROP COLUMN confidence`);
  }
}

import { WEBHOOK_OUTBOX_DDL } from '@kb/common';
import { MigrationInterface, QueryRunner } from 'typeorm';

/** The transactional outbox of webhook events (batch.completed/failed; docs/webhooks.md). */
export class WebhookOutbox1764000000000 implements MigrationInterface {
  name = 'WebhookOutbox1764000000000';

  async up(q: QueryRunner): Promise<void> {
    for (const sql of WEBHOOK_OUTBOX_DDL) await q.query(sql);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE webhook_outbox`);
  }
}

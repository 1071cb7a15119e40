import { sqlMigration } from '@kb/common';

/**
 * Webhook endpoints of organizations and their delivery log (decisions.md "Webhooks",
 * docs/webhooks.md). `secret_ciphertext` is the endpoint's signing secret encrypted with
 * AES-256-GCM under WEBHOOK_SECRET_KEY. A delivery row is one event for one endpoint; `seq`
 * orders the deliveries of one resource (`resource_key`), `lease_until` marks an attempt in flight
 * (another worker takes it over once the lease has passed).
 */
export const InitWebhooks1764000000001 = sqlMigration('InitWebhooks1764000000001', {
  up: [
    `
      CREATE TABLE webhook_endpoints (
        id uuid PRIMARY KEY,
        org_id text NOT NULL,
        url text NOT NULL,
        events text[] NOT NULL,
        description text NULL,
        enabled boolean NOT NULL DEFAULT true,
        secret_ciphertext text NOT NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL
      )`,
    `CREATE INDEX webhook_endpoints_org_idx ON webhook_endpoints (org_id, created_at DESC, id DESC)`,
    `
      CREATE TABLE webhook_deliveries (
        id uuid PRIMARY KEY,
        seq bigserial NOT NULL UNIQUE,
        endpoint_id uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
        org_id text NOT NULL,
        event_id uuid NOT NULL,
        event_type text NOT NULL,
        resource_key text NOT NULL,
        payload jsonb NOT NULL,
        status text NOT NULL DEFAULT 'pending',
        attempts integer NOT NULL DEFAULT 0,
        response_status integer NULL,
        last_error text NULL,
        created_at timestamptz NOT NULL,
        last_attempt_at timestamptz NULL,
        next_attempt_at timestamptz NOT NULL,
        give_up_at timestamptz NOT NULL,
        lease_until timestamptz NULL,
        CONSTRAINT webhook_deliveries_status_chk CHECK (status IN ('pending', 'succeeded', 'failed')),
        CONSTRAINT webhook_deliveries_event_uq UNIQUE (endpoint_id, event_id)
      )`,
    `CREATE INDEX webhook_deliveries_log_idx ON webhook_deliveries (endpoint_id, created_at DESC, seq DESC)`,
    `CREATE INDEX webhook_deliveries_pending_idx ON webhook_deliveries (endpoint_id, resource_key, seq) WHERE status = 'pending'`,
  ],
  down: [`DROP TABLE webhook_deliveries`, `DROP TABLE webhook_endpoints`],
});

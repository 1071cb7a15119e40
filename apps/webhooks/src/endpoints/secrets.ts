import { randomBytes } from 'node:crypto';

/** AES-256-GCM sealing of secrets under WEBHOOK_SECRET_KEY (shared with the gateway's idempotency store). */
export { SecretBox } from '@kb/common';

/**
 * A new endpoint signing secret in the Standard Webhooks format: `whsec_` + base64 of 32 random
 * bytes (the spec asks for 24 to 64 bytes; standardwebhooks' `Webhook` accepts it as is).
 */
export function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

import { connectNats, Logger, NatsConnection } from '@kb/common';
import { Events } from 'nats';
import type { AccountsService } from './accounts.service';

/**
 * Core NATS subject on which the operator CLI announces a change to a key or an organization
 * (revocation, quota change, safety flag). Every gateway replica subscribes and drops its cached
 * lookups, so a revoked key is refused by all replicas within milliseconds.
 */
export const ACCOUNT_CHANGED_SUBJECT = 'kb.gateway.accounts.changed';

/** Payload of ACCOUNT_CHANGED_SUBJECT. */
export interface AccountChange {
  keyId?: string;
  orgId?: string;
  reason: 'key.revoked' | 'org.quota' | 'org.safety';
}

/**
 * Publishes an AccountChange (fire-and-forget core NATS, flushed before returning).
 * @throws when NATS cannot be reached within `timeoutMs`; callers report it (the cache TTL still
 *   bounds how long a replica may keep a revoked key).
 */
export async function publishAccountChange(natsUrl: string, change: AccountChange, timeoutMs = 2000): Promise<void> {
  const nc = await connectNats(natsUrl, 'kbctl', timeoutMs);
  try {
    nc.publish(ACCOUNT_CHANGED_SUBJECT, Buffer.from(JSON.stringify(change)));
    await nc.flush();
  } finally {
    await nc.close();
  }
}

/**
 * Subscribes a gateway replica to account changes: each message invalidates the matching cached
 * keys; a reconnect clears the whole cache (messages may have been missed while disconnected).
 */
export function subscribeAccountChanges(nc: NatsConnection, accounts: AccountsService, logger: Logger): void {
  const sub = nc.subscribe(ACCOUNT_CHANGED_SUBJECT);
  void (async () => {
    for await (const msg of sub) {
      try {
        const change = JSON.parse(Buffer.from(msg.data).toString('utf8')) as AccountChange;
        accounts.invalidate({ keyId: change.keyId, orgId: change.orgId });
        logger.info({ change }, 'account change: key cache invalidated');
      } catch (e) {
        logger.warn({ err: e }, 'ignoring malformed account change message');
      }
    }
  })();
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === Events.Reconnect) accounts.invalidate();
    }
  })();
}

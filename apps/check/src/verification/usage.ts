import { Logger } from '@kb/common';
import { TokensRecordedEvent } from '@kb/events';
import { randomUUID } from 'node:crypto';
import type { CallUsage } from './judges';

/**
 * Publishes one `usage.tokens.recorded` event per model call (the embedded judge reports its own
 * estimate) so the gateway can enforce monthly token quotas. A publish failure is logged, never
 * fails the check itself.
 */
export class UsageRecorder {
  constructor(
    private readonly publish: (event: TokensRecordedEvent) => Promise<void>,
    private readonly logger: Logger,
  ) {}

  /** @param source `check.verify` or `check.run`. */
  async record(orgId: string, source: string, calls: CallUsage[]): Promise<void> {
    const at = new Date().toISOString();
    for (const c of calls) {
      const event: TokensRecordedEvent = {
        id: randomUUID(),
        orgId,
        source,
        model: c.model,
        promptTokens: c.usage.promptTokens,
        completionTokens: c.usage.completionTokens,
        totalTokens: c.usage.totalTokens,
        at,
      };
      try {
        await this.publish(event);
      } catch (err) {
        this.logger.warn({ err, org_id: orgId, source }, 'could not record token usage');
      }
    }
  }
}

import { AppError } from '@kb/common';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { ApiKeyEntity, OrganizationEntity } from './account.entities';
import { AccountsRepository } from './accounts.repository';

/** Default per-key rate limit (service-api.md §8: 100 requests per minute). */
export const DEFAULT_RATE_LIMIT_PER_MINUTE = 100;
const KEY_PREFIX = 'kb_';

/** SHA-256 (hex) of an API key secret: the only form in which keys are stored. */
export function hashApiKey(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/** An authenticated key with its organization. */
export interface Principal {
  keyId: string;
  /** Name of the API key (null when it has none): the audit log's `actor.api_key_name`. */
  keyName: string | null;
  orgId: string;
  /** Name of the organization (names do not change; served by GET /organization from the cache). */
  orgName: string;
  rateLimitPerMinute: number;
  /** Monthly caps of the organization; null = unlimited. */
  monthlyRequestQuota: number | null;
  monthlyTokenQuota: number | null;
}

/** Actor of the audit events of operator (kbctl) changes: no API key, `operator: kbctl`. */
export const OPERATOR_ACTOR = { api_key_id: null, api_key_name: null, operator: 'kbctl' };

/** An organization's settings as its audit events record them (before/after) and kbctl prints them. */
export function orgSettings(org: OrganizationEntity) {
  return {
    name: org.name,
    safety_assistant_enabled: org.safetyAssistantEnabled,
    monthly_request_quota: org.monthlyRequestQuota,
    monthly_token_quota: org.monthlyTokenQuota,
  };
}

/** Default lifetime of a cached key lookup (ms); revocations also invalidate it at once via NATS. */
export const DEFAULT_KEY_CACHE_TTL_MS = 60_000;

/**
 * Organizations and API keys: the operator CLI's use cases and the gateway's key lookup. Every
 * change records an audit event (actor {@link OPERATOR_ACTOR}) in the transaction of the change:
 * `organization.created`, `organization.updated` (before/after), `api_key.created`, `api_key.revoked`.
 * Key secrets are `kb_` + 32 random bytes (CSPRNG, base64url): shown once, stored as SHA-256.
 */
export class AccountsService {
  /** key hash → principal (null = known unknown/revoked) and the time the entry expires (epoch ms). */
  private readonly cache = new Map<string, { principal: Principal; expiresAt: number }>();

  /**
   * @param cacheTtlMs lifetime of a cached key lookup; 0 disables the cache (the CLI).
   */
  constructor(
    private readonly accounts: AccountsRepository,
    private readonly cacheTtlMs = 0,
  ) {}

  async createOrganization(input: { name: string; safetyAssistantEnabled?: boolean }): Promise<OrganizationEntity> {
    const name = input.name.trim();
    if (name.length < 1 || name.length > 200) throw AppError.validation('--name must be 1 to 200 characters.');
    const now = new Date();
    const org: OrganizationEntity = {
      id: randomUUID(),
      name,
      safetyAssistantEnabled: input.safetyAssistantEnabled ?? false,
      monthlyRequestQuota: null,
      monthlyTokenQuota: null,
      createdAt: now,
      updatedAt: now,
    };
    await this.accounts.insert(OrganizationEntity, org, {
      orgId: org.id,
      action: 'organization.created',
      resourceType: 'organization',
      resourceId: org.id,
      actor: OPERATOR_ACTOR,
      at: now,
      data: { after: orgSettings(org) },
    });
    return org;
  }

  async getOrganization(id: string): Promise<OrganizationEntity | null> {
    return this.accounts.findOrganization(id);
  }

  /**
   * Whether the organization may use the safety assistant (`kbctl org safety`): the flag the
   * agent routes (query, chat, batches) pass to the agent service; false for an unknown id.
   */
  async safetyAssistantEnabled(orgId: string): Promise<boolean> {
    const org = await this.getOrganization(orgId);
    return org?.safetyAssistantEnabled ?? false;
  }

  private async requireOrganization(id: string): Promise<OrganizationEntity> {
    const org = await this.getOrganization(id);
    if (!org) throw AppError.notFound(`Organization ${id} not found.`);
    return org;
  }

  /** Every organization, oldest first, with its number of keys not revoked (`kbctl org list`). */
  async listOrganizations(): Promise<{ organization: OrganizationEntity; activeKeys: number }[]> {
    return this.accounts.listOrganizationsWithActiveKeys();
  }

  /** Sets monthly caps; `null` = unlimited, `undefined` = unchanged. */
  async setQuotas(orgId: string, quotas: { requests?: number | null; tokens?: number | null }): Promise<OrganizationEntity> {
    const org = await this.requireOrganization(orgId);
    const before = orgSettings(org);
    for (const v of [quotas.requests, quotas.tokens]) {
      if (v !== undefined && v !== null && (!Number.isInteger(v) || v < 0)) throw AppError.validation('Quotas must be whole numbers of 0 or more.');
    }
    if (quotas.requests !== undefined) org.monthlyRequestQuota = quotas.requests;
    if (quotas.tokens !== undefined) org.monthlyTokenQuota = quotas.tokens;
    org.updatedAt = new Date();
    await this.accounts.save(OrganizationEntity, org, this.orgUpdated(org, before));
    return org;
  }

  async setSafetyAssistant(orgId: string, enabled: boolean): Promise<OrganizationEntity> {
    const org = await this.requireOrganization(orgId);
    const before = orgSettings(org);
    org.safetyAssistantEnabled = enabled;
    org.updatedAt = new Date();
    await this.accounts.save(OrganizationEntity, org, this.orgUpdated(org, before));
    return org;
  }

  /** Creates a key; the returned `secret` is shown once and never stored. */
  async createApiKey(input: { orgId: string; name?: string | null; rateLimitPerMinute?: number }): Promise<{ key: ApiKeyEntity; secret: string }> {
    await this.requireOrganization(input.orgId);
    const rate = input.rateLimitPerMinute ?? DEFAULT_RATE_LIMIT_PER_MINUTE;
    if (!Number.isInteger(rate) || rate < 1) throw AppError.validation('--rate-limit must be a whole number of at least 1.');
    const secret = KEY_PREFIX + randomBytes(32).toString('base64url');
    const key: ApiKeyEntity = {
      id: randomUUID(),
      orgId: input.orgId,
      name: input.name ?? null,
      keyHash: hashApiKey(secret),
      keyPrefix: secret.slice(0, 10),
      rateLimitPerMinute: rate,
      createdAt: new Date(),
      revokedAt: null,
    };
    await this.accounts.insert(ApiKeyEntity, key, {
      orgId: key.orgId,
      action: 'api_key.created',
      resourceType: 'api_key',
      resourceId: key.id,
      actor: OPERATOR_ACTOR,
      at: key.createdAt,
      data: { after: { name: key.name, key_prefix: key.keyPrefix, rate_limit_per_minute: key.rateLimitPerMinute } },
    });
    return { key, secret };
  }

  listApiKeys(orgId: string): Promise<ApiKeyEntity[]> {
    return this.accounts.listKeys(orgId);
  }

  async revokeApiKey(keyId: string): Promise<ApiKeyEntity> {
    const key = await this.accounts.findKey(keyId);
    if (!key) throw AppError.notFound(`API key ${keyId} not found.`);
    if (!key.revokedAt) {
      key.revokedAt = new Date();
      await this.accounts.save(ApiKeyEntity, key, {
        orgId: key.orgId,
        action: 'api_key.revoked',
        resourceType: 'api_key',
        resourceId: key.id,
        actor: OPERATOR_ACTOR,
        at: key.revokedAt,
        data: { before: { revoked_at: null }, after: { revoked_at: key.revokedAt.toISOString() }, name: key.name, key_prefix: key.keyPrefix },
      });
    }
    return key;
  }

  /** The `organization.updated` event of a settings change: before/after of the fields that changed. */
  private orgUpdated(org: OrganizationEntity, before: ReturnType<typeof orgSettings>) {
    const after = orgSettings(org);
    const changed = (Object.keys(after) as (keyof typeof after)[]).filter((k) => after[k] !== before[k]);
    return {
      orgId: org.id,
      action: 'organization.updated',
      resourceType: 'organization',
      resourceId: org.id,
      actor: OPERATOR_ACTOR,
      at: org.updatedAt,
      data: { before: Object.fromEntries(changed.map((k) => [k, before[k]])), after: Object.fromEntries(changed.map((k) => [k, after[k]])) },
    };
  }

  /**
   * Resolves a presented secret to its active key and organization, or null (unknown or revoked).
   * The secret is hashed (SHA-256) and looked up by hash: the comparison never touches the secret,
   * so its timing reveals nothing about stored keys. Hits are served from an in-process cache
   * (no database round trip) for `cacheTtlMs`; `invalidate` drops entries when a key is revoked or
   * an organization's quotas change. Unknown keys are not cached (a new key works at once).
   */
  async authenticate(secret: string): Promise<Principal | null> {
    if (!secret.startsWith(KEY_PREFIX) || secret.length > 200) return null;
    const hash = hashApiKey(secret);
    const now = Date.now();
    const hit = this.cache.get(hash);
    if (hit && hit.expiresAt > now) return hit.principal;
    const row = await this.accounts.findActiveKeyByHash(hash);
    if (!row) {
      this.cache.delete(hash);
      return null;
    }
    const principal: Principal = {
      keyId: row.id,
      keyName: row.name ?? null,
      orgId: row.org_id,
      orgName: row.org_name,
      rateLimitPerMinute: row.rate_limit_per_minute,
      monthlyRequestQuota: row.monthly_request_quota === null ? null : Number(row.monthly_request_quota),
      monthlyTokenQuota: row.monthly_token_quota === null ? null : Number(row.monthly_token_quota),
    };
    if (this.cacheTtlMs > 0) {
      if (this.cache.size >= 100_000) this.cache.clear();
      this.cache.set(hash, { principal, expiresAt: now + this.cacheTtlMs });
    }
    return principal;
  }

  /**
   * Drops cached lookups: of one key (`keyId`), of every key of an organization (`orgId`), or all
   * (no argument, e.g. after the invalidation channel reconnects and may have missed messages).
   */
  invalidate(change: { keyId?: string; orgId?: string } = {}): void {
    if (!change.keyId && !change.orgId) {
      this.cache.clear();
      return;
    }
    for (const [hash, entry] of this.cache) {
      if (entry.principal.keyId === change.keyId || entry.principal.orgId === change.orgId) this.cache.delete(hash);
    }
  }
}

import { AuditEventInput, recordAuditEvent } from '@kb/common';
import { DataSource, EntityManager, EntityTarget, IsNull, type QueryDeepPartialEntity, Repository } from 'typeorm';
import { ApiKeyEntity, OrganizationEntity } from './account.entities';

/** An active key joined with its organization, as the key lookup reads it. */
export interface ActiveKeyRow {
  id: string;
  name: string | null;
  org_id: string;
  org_name: string;
  rate_limit_per_minute: number;
  /** bigint columns: strings as `pg` returns them, null = unlimited. */
  monthly_request_quota: string | null;
  monthly_token_quota: string | null;
}

/**
 * Data access for organizations and API keys (schema `gateway`): TypeORM's repository API for the
 * entities' plain reads and writes, one hand-written join (bound parameter) for the key lookup.
 */
export class AccountsRepository {
  private readonly orgs: Repository<OrganizationEntity>;
  private readonly keys: Repository<ApiKeyEntity>;

  constructor(private readonly db: DataSource) {
    this.orgs = db.getRepository(OrganizationEntity);
    this.keys = db.getRepository(ApiKeyEntity);
  }

  /**
   * Inserts `row` (an organization, a key) into the table of `entity`; `audit` (the operator's
   * event), when given, is recorded in the same transaction.
   */
  async insert<T extends OrganizationEntity | ApiKeyEntity>(entity: EntityTarget<T>, row: T, audit?: AuditEventInput): Promise<void> {
    await this.audited((m) => m.getRepository(entity).insert(row as QueryDeepPartialEntity<T>), audit);
  }

  /** Saves `row` (an organization, a key) to the table of `entity`; `audit`, when given, is recorded in the same transaction. */
  async save<T extends OrganizationEntity | ApiKeyEntity>(entity: EntityTarget<T>, row: T, audit?: AuditEventInput): Promise<void> {
    await this.audited((m) => m.getRepository(entity).save(row), audit);
  }

  findOrganization(id: string): Promise<OrganizationEntity | null> {
    return this.orgs.findOne({ where: { id } });
  }

  findKey(id: string): Promise<ApiKeyEntity | null> {
    return this.keys.findOne({ where: { id } });
  }

  /** Runs `write` in a transaction that also records `audit` (the operator's event), when given. */
  private async audited(write: (m: EntityManager) => Promise<unknown>, audit: AuditEventInput | undefined): Promise<void> {
    await this.db.transaction(async (m) => {
      await write(m);
      if (audit) await recordAuditEvent(m, audit);
    });
  }

  /** Every organization, oldest first, with its number of keys not revoked. */
  async listOrganizationsWithActiveKeys(): Promise<{ organization: OrganizationEntity; activeKeys: number }[]> {
    const orgs = await this.orgs.find({ order: { createdAt: 'ASC', id: 'ASC' } });
    const counts = await this.keys
      .createQueryBuilder('k')
      .select('k.org_id', 'org_id')
      .addSelect('COUNT(*)::int', 'n')
      .where({ revokedAt: IsNull() })
      .groupBy('k.org_id')
      .getRawMany<{ org_id: string; n: number }>();
    const byOrg = new Map(counts.map((c) => [c.org_id, Number(c.n)]));
    return orgs.map((organization) => ({ organization, activeKeys: byOrg.get(organization.id) ?? 0 }));
  }

  /** Keys of an organization, newest first (revoked ones included). */
  listKeys(orgId: string): Promise<ApiKeyEntity[]> {
    return this.keys.find({ where: { orgId }, order: { createdAt: 'DESC' } });
  }

  /** The key not revoked whose secret hashes to `keyHash` (SHA-256 hex), with its organization; null when none. */
  async findActiveKeyByHash(keyHash: string): Promise<ActiveKeyRow | null> {
    const rows: ActiveKeyRow[] = await this.db.query(
      `SELECT k.id, k.name, k.org_id, o.name AS org_name, k.rate_limit_per_minute, o.monthly_request_quota, o.monthly_token_quota
         FROM api_keys k JOIN organizations o ON o.id = k.org_id
        WHERE k.key_hash = $1 AND k.revoked_at IS NULL`,
      [keyHash],
    );
    return rows[0] ?? null;
  }
}

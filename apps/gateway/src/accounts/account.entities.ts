import { bigintAsNumber } from '@kb/common';
import { Column, Entity, PrimaryColumn } from 'typeorm';

/** An organization (table `gateway.organizations`). Quotas null = unlimited. */
@Entity({ name: 'organizations' })
export class OrganizationEntity {
  @PrimaryColumn({ type: 'text' }) id: string;
  @Column({ type: 'varchar', length: 200 }) name: string;
  @Column({ name: 'safety_assistant_enabled', type: 'boolean' }) safetyAssistantEnabled: boolean;
  @Column({ name: 'monthly_request_quota', type: 'bigint', nullable: true, transformer: bigintAsNumber }) monthlyRequestQuota: number | null;
  @Column({ name: 'monthly_token_quota', type: 'bigint', nullable: true, transformer: bigintAsNumber }) monthlyTokenQuota: number | null;
  @Column({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
  @Column({ name: 'updated_at', type: 'timestamptz' }) updatedAt: Date;
}

/** An API key (table `gateway.api_keys`); the secret itself is never stored, only its SHA-256. */
@Entity({ name: 'api_keys' })
export class ApiKeyEntity {
  @PrimaryColumn({ type: 'uuid' }) id: string;
  @Column({ name: 'org_id', type: 'text' }) orgId: string;
  @Column({ type: 'varchar', length: 200, nullable: true }) name: string | null;
  @Column({ name: 'key_hash', type: 'char', length: 64 }) keyHash: string;
  @Column({ name: 'key_prefix', type: 'varchar', length: 16 }) keyPrefix: string;
  @Column({ name: 'rate_limit_per_minute', type: 'integer' }) rateLimitPerMinute: number;
  @Column({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
  @Column({ name: 'revoked_at', type: 'timestamptz', nullable: true }) revokedAt: Date | null;
}

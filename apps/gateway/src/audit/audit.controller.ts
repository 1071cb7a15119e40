import { AppError, AuditEventRow, type CallContext, listAuditEvents } from '@kb/common';
import { Inject, Query } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, Matches } from 'class-validator';
import type { DataSource } from 'typeorm';
import { Ctx } from '../common/http-context';
import { ApiController, ApiGet } from '../common/openapi';
import { pageOf, pageRequest, PaginationQuery } from '../common/pagination.dto';
import { GATEWAY_DATABASE } from '../common/tokens';

/** RFC 3339 date-time (OpenAPI `format: date-time`), years 0001–9999, with a time zone. */
const DATE_TIME_RE = /^(?!0000)\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;

/**
 * A `since`/`until` query value as a Date.
 * @throws AppError VALIDATION_ERROR when it is not a real RFC 3339 date-time.
 */
function parseDateTime(field: string, value: string | undefined): Date | null {
  if (value === undefined) return null;
  const at = DATE_TIME_RE.test(value) ? new Date(value) : null;
  if (!at || Number.isNaN(at.getTime())) throw AppError.validation(`${field} must be an RFC 3339 date-time with a time zone, e.g. 2026-01-31T09:00:00Z`);
  return at;
}

/** Query of GET /api/v2/audit-events (decisions.md "Audit log"). */
export class ListAuditEventsQuery extends PaginationQuery {
  @ApiPropertyOptional({
    maxLength: 64,
    pattern: '^[a-z_]{1,64}$',
    example: 'check_run',
    description:
      'only events of this resource type (project, document, check_run, requirement, batch, webhook_endpoint, webhook_delivery, organization, api_key)',
  })
  @IsOptional()
  @IsString({ message: 'resource_type must be a string' })
  @Matches(/^[a-z_]{1,64}$/, { message: 'resource_type must be 1 to 64 lowercase letters or underscores, e.g. check_run' })
  resource_type?: string;

  @ApiPropertyOptional({
    maxLength: 200,
    pattern: '^[A-Za-z0-9._:-]{1,200}$',
    example: '3c2b1a09-8f7e-4d6c-9b5a-493827160f5e',
    description: 'only events of this resource id',
  })
  @IsOptional()
  @IsString({ message: 'resource_id must be a string' })
  @Matches(/^[A-Za-z0-9._:-]{1,200}$/, { message: 'resource_id must be 1 to 200 letters, digits or . _ : -' })
  resource_id?: string;

  @ApiPropertyOptional({
    maxLength: 129,
    pattern: '^[a-z_]{1,64}\\.[a-z_]{1,64}$',
    example: 'requirement.reviewed',
    description: 'only events of this action (`<resource>.<past-tense verb>`; the list: docs/audit.md)',
  })
  @IsOptional()
  @IsString({ message: 'action must be a string' })
  @Matches(/^[a-z_]{1,64}\.[a-z_]{1,64}$/, { message: 'action must look like <resource>.<verb>, e.g. project.created' })
  action?: string;

  @ApiPropertyOptional({ format: 'date-time', example: '2026-01-31T09:00:00Z', description: 'only events created at or after this time (RFC 3339)' })
  @IsOptional()
  @IsString({ message: 'since must be a string' })
  since?: string;

  @ApiPropertyOptional({ format: 'date-time', example: '2026-02-01T00:00:00Z', description: 'only events created before this time (RFC 3339)' })
  @IsOptional()
  @IsString({ message: 'until must be a string' })
  until?: string;
}

export class AuditActorView {
  @ApiProperty({
    type: String,
    nullable: true,
    format: 'uuid',
    example: '5f1c2d3e-4a5b-4c6d-8e7f-9a0b1c2d3e4f',
    description: 'the API key of the call; null for operator (kbctl) changes',
  })
  api_key_id: string | null;
  @ApiProperty({ type: String, nullable: true, example: 'ci-pipeline', description: 'the name of that key (null when it has none)' })
  api_key_name: string | null;
  @ApiPropertyOptional({
    type: String,
    nullable: true,
    example: 'Dana Reviewer',
    description: 'review events only: the person named by the review (set) or by the removed review (removed)',
  })
  reviewer?: string | null;
  @ApiPropertyOptional({ example: 'kbctl', description: 'operator CLI changes only: `kbctl`' })
  operator?: string;
}

export class AuditEventView {
  @ApiProperty({ format: 'uuid', example: '0e1d2c3b-4a59-4687-9a6b-5c4d3e2f1a0b' }) id: string;
  @ApiProperty({ example: 'org_3f9a' }) org_id: string;
  @ApiProperty({ example: 'requirement.reviewed', description: '`<resource>.<past-tense verb>` (docs/audit.md)' }) action: string;
  @ApiProperty({ example: 'requirement' }) resource_type: string;
  @ApiProperty({ example: '7a6b5c4d-3e2f-4a1b-9c8d-7e6f5a4b3c2d' }) resource_id: string;
  @ApiProperty({ type: AuditActorView }) actor: AuditActorView;
  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    example: { run_id: '3c2b1a09-8f7e-4d6c-9b5a-493827160f5e', before: null, after: { decision: 'fail', reviewer: 'Dana Reviewer', comment: null } },
    description: 'what changed: `before`/`after` for updates and reviews (docs/audit.md)',
  })
  data: Record<string, unknown>;
  @ApiProperty({ type: String, nullable: true, example: 'req-7f3a', description: 'the X-Request-Id of the call (null for operator changes)' }) request_id:
    string | null;
  @ApiProperty({ format: 'date-time', example: '2026-01-31T09:15:02.123Z' }) created_at: string;
}

/** An audit event as the API shows it. */
export function presentAuditEvent(row: AuditEventRow): AuditEventView {
  return {
    id: row.id,
    org_id: row.org_id,
    action: row.action,
    resource_type: row.resource_type,
    resource_id: row.resource_id,
    actor: row.actor,
    data: row.data,
    request_id: row.request_id,
    created_at: new Date(row.created_at).toISOString(),
  };
}

/**
 * /api/v2/audit-events: the organization's audit log (docs/audit.md). Every service writes
 * `audit.audit_events` in the transaction of its change; the gateway reads it here (the caller's
 * organization only, newest first).
 */
@ApiController('Audit', 'api/v2/audit-events')
export class AuditController {
  constructor(@Inject(GATEWAY_DATABASE) private readonly db: DataSource) {}

  @ApiGet('', { operationId: 'listAuditEvents', summary: 'List audit events of the organization, newest first' }, AuditEventView, { paginated: true })
  async list(@Ctx() ctx: CallContext, @Query() q: ListAuditEventsQuery) {
    const since = parseDateTime('since', q.since);
    const until = parseDateTime('until', q.until);
    if (since && until && since > until) throw AppError.validation('since must not be after until');
    const { rows, total } = await listAuditEvents(this.db, ctx.orgId, {
      resourceType: q.resource_type ?? null,
      resourceId: q.resource_id ?? null,
      action: q.action ?? null,
      since,
      until,
      ...pageRequest(q),
    });
    return pageOf(q, rows.map(presentAuditEvent), total);
  }
}

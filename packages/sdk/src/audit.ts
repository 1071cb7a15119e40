import type { KbTransport } from './transport';
import type { AuditEvent } from './types';
import type { Page, PageOptions } from './paging';

/** Filters of {@link listAuditEvents} (all optional; combined with AND). */
export interface AuditEventFilter extends PageOptions {
  /** e.g. `check_run`, `requirement`, `project`, `document`. */
  resourceType?: string;
  resourceId?: string;
  /** `<resource>.<past-tense verb>`, e.g. `requirement.reviewed`. */
  action?: string;
  /** Events created at or after this time (a Date or an RFC 3339 date-time). */
  since?: Date | string;
  /** Events created before this time (a Date or an RFC 3339 date-time). */
  until?: Date | string;
}

const iso = (v: Date | string | undefined) => (v instanceof Date ? v.toISOString() : v);

/**
 * The organization's audit log, newest first (GET /api/v2/audit-events): one event per change
 * (`action`, `resource_type`, `resource_id`, `actor` with the API key's id and name and, for
 * reviews, the reviewer; `data` with before/after for updates and reviews; the call's `request_id`).
 * @throws KbApiError 400 for a bad filter (a time that is not RFC 3339, `since` after `until`…).
 */
export async function listAuditEvents(kb: KbTransport, filter: AuditEventFilter = {}): Promise<Page<AuditEvent>> {
  const query = {
    resource_type: filter.resourceType,
    resource_id: filter.resourceId,
    action: filter.action,
    since: iso(filter.since),
    until: iso(filter.until),
    limit: filter.limit,
    offset: filter.offset,
  };
  return await kb.page(kb.api.GET('/api/v2/audit-events', { params: { query }, signal: filter.signal }));
}

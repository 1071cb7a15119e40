import { AuditOrigin, recordAuditEvent } from '@kb/common';
import { DataSource, Repository } from 'typeorm';
import { ProjectEntity } from './project.entity';

/** A project with its document count (every status). */
export interface ProjectWithCount {
  project: ProjectEntity;
  documentCount: number;
}

/**
 * Data access for projects. Every method takes the caller's org id and filters by it, so another
 * organization's projects are indistinguishable from missing ones.
 */
export class ProjectsRepository {
  private readonly repo: Repository<ProjectEntity>;

  constructor(private readonly dataSource: DataSource) {
    this.repo = dataSource.getRepository(ProjectEntity);
  }

  /** Inserts a project and its `project.created` audit event, in one transaction. */
  async insert(project: ProjectEntity, origin?: AuditOrigin): Promise<void> {
    await this.dataSource.transaction(async (m) => {
      await m.getRepository(ProjectEntity).insert(project);
      await recordAuditEvent(m, {
        orgId: project.orgId,
        action: 'project.created',
        resourceType: 'project',
        resourceId: project.id,
        origin,
        at: project.createdAt,
        data: { after: { name: project.name, description: project.description } },
      });
    });
  }

  async find(orgId: string, id: string): Promise<ProjectEntity | null> {
    return this.repo.findOne({ where: { orgId, id } });
  }

  async findWithCount(orgId: string, id: string): Promise<ProjectWithCount | null> {
    const project = await this.find(orgId, id);
    if (!project) return null;
    const [{ count }] = await this.dataSource.query<{ count: number }[]>(`SELECT count(*)::int AS count FROM documents WHERE org_id = $1 AND project_id = $2`, [
      orgId,
      id,
    ]);
    return { project, documentCount: count };
  }

  /** Newest first. */
  async list(orgId: string, limit: number, offset: number): Promise<{ items: ProjectWithCount[]; total: number }> {
    const [projects, total] = await this.repo.findAndCount({
      where: { orgId },
      order: { createdAt: 'DESC', id: 'DESC' },
      take: limit,
      skip: offset,
    });
    if (projects.length === 0) return { items: [], total };
    const rows: { project_id: string; count: number }[] = await this.dataSource.query(
      `SELECT project_id, count(*)::int AS count FROM documents WHERE org_id = $1 AND project_id = ANY($2::uuid[]) GROUP BY project_id`,
      [orgId, projects.map((p) => p.id)],
    );
    const counts = new Map(rows.map((r) => [r.project_id, r.count]));
    return { items: projects.map((project) => ({ project, documentCount: counts.get(project.id) ?? 0 })), total };
  }

  /**
   * Changes the given fields and records `project.updated` with the before/after of those fields,
   * in one transaction (the row locked).
   * @returns false when the project is missing or another org's (nothing changed).
   */
  async update(orgId: string, id: string, changes: Partial<Pick<ProjectEntity, 'name' | 'description'>>, at: Date, origin?: AuditOrigin): Promise<boolean> {
    return this.dataSource.transaction(async (m) => {
      const repo = m.getRepository(ProjectEntity);
      const current = await repo.findOne({ where: { orgId, id }, lock: { mode: 'pessimistic_write' } });
      if (!current) return false;
      await repo.update({ orgId, id }, { ...changes, updatedAt: at });
      const fields = Object.keys(changes) as (keyof typeof changes)[];
      await recordAuditEvent(m, {
        orgId,
        action: 'project.updated',
        resourceType: 'project',
        resourceId: id,
        origin,
        at,
        data: { before: Object.fromEntries(fields.map((f) => [f, current[f]])), after: Object.fromEntries(fields.map((f) => [f, changes[f]])) },
      });
      return true;
    });
  }

  /**
   * Deletes the project only if it has no documents, in one statement (no race with a concurrent
   * upload reservation: the foreign key also refuses it), with its `project.deleted` audit event.
   * @returns 'deleted', 'not_found' or 'has_documents'.
   */
  async deleteIfEmpty(orgId: string, id: string, origin?: AuditOrigin): Promise<'deleted' | 'not_found' | 'has_documents'> {
    return this.dataSource.transaction(async (tx) => {
      const found: { id: string; name: string; description: string | null }[] = await tx.query(
        `SELECT id, name, description FROM projects WHERE org_id = $1 AND id = $2 FOR UPDATE`,
        [orgId, id],
      );
      if (found.length === 0) return 'not_found';
      const [{ count }] = await tx.query<{ count: number }[]>(`SELECT count(*)::int AS count FROM documents WHERE project_id = $1`, [id]);
      if (count > 0) return 'has_documents';
      await tx.query(`DELETE FROM projects WHERE org_id = $1 AND id = $2`, [orgId, id]);
      await recordAuditEvent(tx, {
        orgId,
        action: 'project.deleted',
        resourceType: 'project',
        resourceId: id,
        origin,
        data: { before: { name: found[0].name, description: found[0].description } },
      });
      return 'deleted';
    });
  }
}

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

  async insert(project: ProjectEntity): Promise<void> {
    await this.repo.insert(project);
  }

  async find(orgId: string, id: string): Promise<ProjectEntity | null> {
    return this.repo.findOne({ where: { orgId, id } });
  }

  async findWithCount(orgId: string, id: string): Promise<ProjectWithCount | null> {
    const project = await this.find(orgId, id);
    if (!project) return null;
    const [{ count }] = await this.dataSource.query(
      `SELECT count(*)::int AS count FROM documents WHERE org_id = $1 AND project_id = $2`,
      [orgId, id],
    );
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

  async update(orgId: string, id: string, changes: Partial<Pick<ProjectEntity, 'name' | 'description'>>, at: Date): Promise<void> {
    await this.repo.update({ orgId, id }, { ...changes, updatedAt: at });
  }

  /**
   * Deletes the project only if it has no documents, in one statement (no race with a concurrent
   * upload reservation: the foreign key also refuses it).
   * @returns 'deleted', 'not_found' or 'has_documents'.
   */
  async deleteIfEmpty(orgId: string, id: string): Promise<'deleted' | 'not_found' | 'has_documents'> {
    return this.dataSource.transaction(async (tx) => {
      const found = await tx.query(`SELECT id FROM projects WHERE org_id = $1 AND id = $2 FOR UPDATE`, [orgId, id]);
      if (found.length === 0) return 'not_found';
      const [{ count }] = await tx.query(`SELECT count(*)::int AS count FROM documents WHERE project_id = $1`, [id]);
      if (count > 0) return 'has_documents';
      await tx.query(`DELETE FROM projects WHERE org_id = $1 AND id = $2`, [orgId, id]);
      return 'deleted';
    });
  }
}

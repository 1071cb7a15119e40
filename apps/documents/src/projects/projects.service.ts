import { AppError, CallContext, charCount, DESCRIPTION_MAX_CHARS, PROJECT_NAME_MAX_CHARS } from '@kb/common';
import { randomUUID } from 'node:crypto';
import { ProjectEntity } from './project.entity';
import { ProjectsRepository, ProjectWithCount } from './projects.repository';

function validateName(name: string): string {
  const trimmed = name.trim();
  if (trimmed.length < 1 || charCount(name) > PROJECT_NAME_MAX_CHARS) {
    throw AppError.validation(`name must be 1 to ${PROJECT_NAME_MAX_CHARS} characters.`);
  }
  return name;
}

function validateDescription(description: string): string {
  if (charCount(description) > DESCRIPTION_MAX_CHARS) {
    throw AppError.validation(`description must be at most ${DESCRIPTION_MAX_CHARS} characters.`);
  }
  return description;
}

/** Use cases for projects (service-api.md "Projects"). All scoped to the caller's org. */
export class ProjectsService {
  constructor(private readonly projects: ProjectsRepository) {}

  async create(ctx: CallContext, input: { name: string; description: string | null }): Promise<ProjectWithCount> {
    const now = new Date();
    const project: ProjectEntity = {
      id: randomUUID(),
      orgId: ctx.orgId,
      name: validateName(input.name),
      description: input.description === null ? null : validateDescription(input.description),
      createdAt: now,
      updatedAt: now,
    };
    await this.projects.insert(project, ctx);
    return { project, documentCount: 0 };
  }

  /** @throws NOT_FOUND when missing or another org's. */
  async get(ctx: CallContext, id: string): Promise<ProjectWithCount> {
    const found = await this.projects.findWithCount(ctx.orgId, id);
    if (!found) throw AppError.notFound(`Project ${id} not found.`);
    return found;
  }

  /** @throws NOT_FOUND when missing or another org's. */
  async requireExists(ctx: CallContext, id: string): Promise<void> {
    if (!(await this.projects.find(ctx.orgId, id))) throw AppError.notFound(`Project ${id} not found.`);
  }

  list(ctx: CallContext, limit: number, offset: number) {
    return this.projects.list(ctx.orgId, limit, offset);
  }

  /**
   * Changes only the supplied fields; `description: null` clears it.
   * @throws VALIDATION_ERROR when no field is supplied; NOT_FOUND as for get.
   */
  async update(ctx: CallContext, id: string, changes: { name?: string; description?: string | null }): Promise<ProjectWithCount> {
    if (changes.name === undefined && changes.description === undefined) {
      throw AppError.validation('Provide at least one of name or description.');
    }
    await this.get(ctx, id);
    const patch: { name?: string; description?: string | null } = {};
    if (changes.name !== undefined) patch.name = validateName(changes.name);
    if (changes.description !== undefined) {
      patch.description = changes.description === null ? null : validateDescription(changes.description);
    }
    if (!(await this.projects.update(ctx.orgId, id, patch, new Date(), ctx))) throw AppError.notFound(`Project ${id} not found.`);
    return this.get(ctx, id);
  }

  /** @throws NOT_FOUND; CONFLICT when the project still has documents (any status). */
  async delete(ctx: CallContext, id: string): Promise<void> {
    const result = await this.projects.deleteIfEmpty(ctx.orgId, id, ctx);
    if (result === 'not_found') throw AppError.notFound(`Project ${id} not found.`);
    if (result === 'has_documents') {
      throw AppError.conflict('The project still has documents. Delete its documents first, then the project.');
    }
  }
}

import { documentsV1 } from '@kb/proto';
import { Body, Delete, HttpCode, Inject, Param, Patch, Post, Query } from '@nestjs/common';
import { type CallContext, ErrorCode, PROJECT_NAME_MAX_CHARS, DESCRIPTION_MAX_CHARS, pickSnakeFields } from '@kb/common';
import { ApiOperation, ApiPropertyOptional, ApiResponse } from '@nestjs/swagger';
import { ProjectView } from '../common/api-models';
import { ApiController, ApiEnvelope, ApiErrors, ApiGet, ApiSchemaExtra } from '../common/openapi';
import { IsOptional, IsString, ValidateIf } from 'class-validator';
import { type DocumentsClient } from '../common/clients';
import { Ctx } from '../common/http-context';
import { pageOf, pageRequest, PaginationQuery } from '../common/pagination.dto';
import { DOCUMENTS_CLIENT } from '../common/tokens';
import { CharLength, NON_BLANK_PATTERN, NonBlankText, UuidParamPipe } from '../common/validation';

export class CreateProjectDto {
  @NonBlankText('name', PROJECT_NAME_MAX_CHARS, { example: 'Site safety 2026', description: 'not blank' })
  name: string;

  @ApiPropertyOptional({ maxLength: DESCRIPTION_MAX_CHARS, nullable: true, example: 'Handbooks and method statements for the north site' })
  @IsOptional()
  @IsString({ message: 'description must be a string' })
  @CharLength(0, DESCRIPTION_MAX_CHARS, { message: `description must be at most ${DESCRIPTION_MAX_CHARS} characters` })
  description?: string | null;
}

/**
 * At least one of name and description (the documents service refuses an empty update). Stated as
 * `allOf: [{ anyOf: [{ required: [name] }, { required: [description] }] }]`, which JSON Schema reads
 * exactly as a top-level `anyOf`, but which client generators read as "this object, with a
 * constraint": openapi-typescript made the top-level form `{…} | unknown` (so `unknown`) and
 * openapi-python-client `Any`.
 */
@ApiSchemaExtra({ allOf: [{ anyOf: [{ required: ['name'] }, { required: ['description'] }] }] })
export class UpdateProjectDto {
  @ApiPropertyOptional({
    minLength: 1,
    maxLength: PROJECT_NAME_MAX_CHARS,
    pattern: NON_BLANK_PATTERN,
    example: 'Site safety 2027',
    description: 'omit to keep the name; null is refused (a project always has a name)',
  })
  // Validated whenever present: `"name": null` is refused, never stored as the text "null".
  @ValidateIf((o: UpdateProjectDto) => o.name !== undefined)
  @IsString({ message: 'name must be a string (omit it to keep the current name)' })
  @CharLength(1, PROJECT_NAME_MAX_CHARS, { message: `name must be 1 to ${PROJECT_NAME_MAX_CHARS} characters` })
  name?: string;

  @ApiPropertyOptional({
    maxLength: DESCRIPTION_MAX_CHARS,
    nullable: true,
    example: 'Handbooks for the renovated warehouse',
    description: 'null clears the description',
  })
  @ValidateIf((o: UpdateProjectDto) => o.description !== null && o.description !== undefined)
  @IsString({ message: 'description must be a string or null' })
  @CharLength(0, DESCRIPTION_MAX_CHARS, { message: `description must be at most ${DESCRIPTION_MAX_CHARS} characters` })
  description?: string | null;
}

/** Project resource as the API shows it (service-api.md §2 "Project"). */
export function presentProject(p: documentsV1.Project) {
  return pickSnakeFields(p, ['id', 'orgId', 'name', 'description', 'documentCount', 'createdAt', 'updatedAt'], null);
}

/** /api/v2/projects: thin translation to DocumentsService over gRPC. */
@ApiController('Projects', 'api/v2/projects')
export class ProjectsController {
  constructor(@Inject(DOCUMENTS_CLIENT) private readonly documents: DocumentsClient) {}

  @Post()
  @ApiOperation({ operationId: 'createProject', summary: 'Create a project' })
  @ApiEnvelope(ProjectView, { status: 201 })
  async create(@Ctx() ctx: CallContext, @Body() body: CreateProjectDto) {
    return presentProject(await this.documents.createProject({ name: body.name, description: body.description ?? undefined }, ctx));
  }

  @ApiGet('', { operationId: 'listProjects', summary: 'List projects, newest first' }, ProjectView, { paginated: true })
  async list(@Ctx() ctx: CallContext, @Query() q: PaginationQuery) {
    const res = await this.documents.listProjects({ page: pageRequest(q) }, ctx);
    return pageOf(q, res.projects.map(presentProject), res.total);
  }

  @ApiGet(':id', { operationId: 'getProject', summary: 'Get a project' }, ProjectView)
  async get(@Ctx() ctx: CallContext, @Param('id', UuidParamPipe) id: string) {
    return presentProject(await this.documents.getProject({ id }, ctx));
  }

  @Patch(':id')
  @ApiOperation({ operationId: 'updateProject', summary: 'Update name and/or description (null clears it)' })
  @ApiEnvelope(ProjectView)
  async update(@Ctx() ctx: CallContext, @Param('id', UuidParamPipe) id: string, @Body() body: UpdateProjectDto) {
    return presentProject(
      await this.documents.updateProject(
        { id, name: body.name, hasDescription: body.description !== undefined, description: body.description ?? undefined },
        ctx,
      ),
    );
  }

  @Delete(':id')
  @HttpCode(204)
  @ApiOperation({ operationId: 'deleteProject', summary: 'Delete an empty project' })
  @ApiResponse({ status: 204, description: 'Deleted; empty body.' })
  @ApiErrors(ErrorCode.CONFLICT)
  async remove(@Ctx() ctx: CallContext, @Param('id', UuidParamPipe) id: string): Promise<void> {
    await this.documents.deleteProject({ id }, ctx);
  }
}

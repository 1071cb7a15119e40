import { presentRun } from '@kb/events';
import { AsyncClient, CallContext } from '@kb/common';
import { checkV1 } from '@kb/proto';
import { Body, Controller, Get, HttpCode, Inject, Param, Post, Query } from '@nestjs/common';
import {
  ApiBearerAuth,
  ApiBody,
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiProperty,
  ApiPropertyOptional,
  ApiTags,
} from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsBoolean, IsObject, IsOptional, IsString, IsUUID, Length, ValidateNested } from 'class-validator';
import { Paginated } from '../common/envelope';
import { Ctx } from '../common/http-context';
import { PaginationQuery } from '../common/pagination.dto';
import { OptionalUuidList, UuidParamPipe } from '../common/validation';

/** Nest injection token of the CheckRunsService gRPC client. */
export const CHECK_RUNS_CLIENT = Symbol('CheckRunsClient');
export type CheckRunsClient = AsyncClient<typeof checkV1.CheckRunsServiceService>;

/** Creating a run with 1,000 requirements writes them in one transaction; allow for a slow disk. */
const RUN_CALL_TIMEOUT_MS = 60_000;

export class RequirementInputDto {
  @ApiProperty({ minLength: 1, maxLength: 5000, description: 'requirement text' })
  @IsString({ message: 'text must be a string' })
  @Length(1, 5000, { message: 'text must be 1 to 5000 characters' })
  text: string;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: 'any JSON object; returned as is with the requirement' })
  @IsOptional()
  @IsObject({ message: 'metadata must be a JSON object' })
  metadata?: Record<string, unknown>;
}

export class CreateRunDto {
  @ApiProperty({ format: 'uuid' })
  @IsUUID('all', { message: 'project_id must be a UUID' })
  project_id: string;

  @ApiProperty({ minLength: 1, maxLength: 500, description: 'run name' })
  @IsString({ message: 'name must be a string' })
  @Length(1, 500, { message: 'name must be 1 to 500 characters' })
  name: string;

  @ApiProperty({ type: [RequirementInputDto], minItems: 1, maxItems: 1000 })
  @IsArray({ message: 'requirements must be an array' })
  @ArrayMinSize(1, { message: 'requirements must have 1 to 1000 items' })
  @ArrayMaxSize(1000, { message: 'requirements must have 1 to 1000 items' })
  @ValidateNested({ each: true })
  @Type(() => RequirementInputDto)
  requirements: RequirementInputDto[];

  @OptionalUuidList('handbook_ids', 'document ids (handbooks) to limit the check to')
  handbook_ids?: string[];
}

export class TriggerRunDto {
  @ApiPropertyOptional({ default: false, description: 're-check requirements already completed' })
  @IsOptional()
  @IsBoolean({ message: 'reprocess must be a boolean' })
  reprocess?: boolean;

  @ApiPropertyOptional({ default: false, description: 'one sub-requirement per requirement (its own text), for faster results' })
  @IsOptional()
  @IsBoolean({ message: 'skip_breakdown must be a boolean' })
  skip_breakdown?: boolean;
}

export class ListRunsQuery extends PaginationQuery {
  @ApiPropertyOptional({ format: 'uuid', description: 'only runs of this project' })
  @IsOptional()
  @IsUUID('all', { message: 'project_id must be a UUID' })
  project_id?: string;
}

class SourceView {
  @ApiProperty() handbook_id: string;
  @ApiProperty() node_id: string;
  @ApiProperty() title: string;
  @ApiProperty({ type: Number, nullable: true }) start_page: number | null;
  @ApiProperty({ type: Number, nullable: true }) end_page: number | null;
}

class SubRequirementView {
  @ApiProperty() id: string;
  @ApiProperty() requirement_id: string;
  @ApiProperty() text: string;
  @ApiProperty({ description: 'explanation and the quoted evidence' }) justification: string;
  @ApiProperty({ minimum: 0, maximum: 1, description: 'confidence' }) score: number;
  @ApiProperty({ enum: ['comply', 'not-comply', 'pending'] }) status: string;
  @ApiProperty({ type: [SourceView], nullable: true }) sources: SourceView[] | null;
}

class RequirementView {
  @ApiProperty() id: string;
  @ApiProperty({ format: 'uuid' }) run_id: string;
  @ApiProperty() text: string;
  @ApiProperty() order_index: number;
  @ApiProperty({ enum: ['pending', 'processing', 'completed'] }) status: string;
  @ApiProperty({ type: 'object', additionalProperties: true, nullable: true }) metadata: Record<string, unknown> | null;
  @ApiProperty({ type: [SubRequirementView] }) sub_requirements: SubRequirementView[];
  @ApiProperty() created_at: string;
  @ApiProperty() updated_at: string;
}

class RunView {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty() name: string;
  @ApiProperty() org_id: string;
  @ApiProperty({ format: 'uuid' }) project_id: string;
  @ApiProperty({ enum: ['pending', 'processing', 'completed', 'stopped', 'failed'] }) status: string;
  @ApiProperty() total_requirements: number;
  @ApiProperty() processed_requirements: number;
  @ApiProperty() passed_requirements: number;
  @ApiProperty() failed_requirements: number;
  @ApiProperty({ type: [String] }) handbook_ids: string[];
  @ApiProperty({ type: String, nullable: true, description: 'why the run failed (status failed)' }) error_message: string | null;
  @ApiProperty({ type: String, nullable: true }) processing_started_at: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'when the run left processing (completed, stopped or failed)' })
  processing_completed_at: string | null;
  @ApiProperty() created_at: string;
  @ApiProperty() updated_at: string;
}

class RunDetailView extends RunView {
  @ApiProperty({ type: [RequirementView] }) requirements: RequirementView[];
}

class TriggerView {
  @ApiProperty({ format: 'uuid' }) run_id: string;
  @ApiProperty() task_id: string;
  @ApiProperty({ enum: ['processing', 'completed'] }) status: string;
}

/** Check run summary as the API shows it: one presenter, shared with the webhook payloads (@kb/events). */
export { presentRun };

export function presentRequirement(q: checkV1.Requirement) {
  return {
    id: q.id,
    run_id: q.runId,
    text: q.text,
    order_index: q.orderIndex,
    status: q.status,
    metadata: q.metadataJson ? JSON.parse(q.metadataJson) : null,
    sub_requirements: q.subRequirements.map((s) => ({
      id: s.id,
      requirement_id: s.requirementId,
      text: s.text,
      justification: s.justification,
      score: s.score,
      status: s.status,
      sources: s.hasSources
        ? s.sources.map((src) => ({
            handbook_id: src.handbookId,
            node_id: src.nodeId,
            title: src.title,
            start_page: src.startPage ?? null,
            end_page: src.endPage ?? null,
          }))
        : null,
    })),
    created_at: q.createdAt,
    updated_at: q.updatedAt,
  };
}

/** /api/v2/check/runs: batches of requirements checked in the background (service-api.md §4, decisions.md "Check"). */
@ApiTags('Check')
@ApiBearerAuth()
@Controller('api/v2/check/runs')
export class CheckRunsController {
  constructor(@Inject(CHECK_RUNS_CLIENT) private readonly runs: CheckRunsClient) {}

  @Post()
  @ApiOperation({ summary: 'Create a check run (status pending; processing does not start)' })
  @ApiCreatedResponse({ type: RunView })
  @ApiNotFoundResponse({ description: 'project or a handbook not found' })
  async create(@Ctx() ctx: CallContext, @Body() body: CreateRunDto) {
    const run = await this.runs.createRun(
      {
        projectId: body.project_id,
        name: body.name,
        handbookIds: body.handbook_ids ?? [],
        requirements: body.requirements.map((r) => ({ text: r.text, metadataJson: r.metadata === undefined || r.metadata === null ? '' : JSON.stringify(r.metadata) })),
      },
      { ...ctx, timeoutMs: RUN_CALL_TIMEOUT_MS },
    );
    return presentRun(run);
  }

  @Get()
  @ApiOperation({ summary: 'List check runs, newest first' })
  @ApiOkResponse({ type: [RunView] })
  async list(@Ctx() ctx: CallContext, @Query() q: ListRunsQuery) {
    const res = await this.runs.listRuns({ projectId: q.project_id, limit: q.limit, offset: q.offset }, ctx);
    return new Paginated(res.runs.map(presentRun), { limit: q.limit, offset: q.offset, total: res.total });
  }

  @Get(':id')
  @ApiOperation({ summary: 'Check run detail: counters, processing timestamps and all requirements' })
  @ApiOkResponse({ type: RunDetailView })
  @ApiNotFoundResponse({ description: 'run not found' })
  async get(@Ctx() ctx: CallContext, @Param('id', UuidParamPipe) id: string) {
    const run = await this.runs.getRun({ id }, { ...ctx, timeoutMs: RUN_CALL_TIMEOUT_MS });
    return { ...presentRun(run), requirements: run.requirements.map(presentRequirement) };
  }

  @Get(':id/requirements')
  @ApiOperation({ summary: 'Requirements of a run with their sub-requirements and metadata' })
  @ApiOkResponse({ type: [RequirementView] })
  @ApiNotFoundResponse({ description: 'run not found' })
  async requirements(@Ctx() ctx: CallContext, @Param('id', UuidParamPipe) id: string) {
    const res = await this.runs.listRequirements({ id }, { ...ctx, timeoutMs: RUN_CALL_TIMEOUT_MS });
    return res.requirements.map(presentRequirement);
  }

  @Post(':id/trigger')
  @HttpCode(200)
  @ApiOperation({ summary: 'Start processing: every requirement not completed (all with reprocess)' })
  @ApiBody({ type: TriggerRunDto, required: false })
  @ApiOkResponse({ type: TriggerView })
  @ApiConflictResponse({ description: 'the run is already being processed' })
  async trigger(@Ctx() ctx: CallContext, @Param('id', UuidParamPipe) id: string, @Body() body: TriggerRunDto = {}) {
    const res = await this.runs.triggerRun(
      { id, reprocess: body?.reprocess ?? false, skipBreakdown: body?.skip_breakdown ?? false },
      { ...ctx, timeoutMs: RUN_CALL_TIMEOUT_MS },
    );
    return { run_id: res.runId, task_id: res.taskId, status: res.status };
  }

  @Post(':id/stop')
  @HttpCode(200)
  @ApiOperation({ summary: 'Stop a processing run (in-flight requirements return to pending)' })
  @ApiOkResponse({ type: RunView })
  @ApiConflictResponse({ description: 'the run is not processing' })
  async stop(@Ctx() ctx: CallContext, @Param('id', UuidParamPipe) id: string) {
    return presentRun(await this.runs.stopRun({ id }, ctx));
  }
}

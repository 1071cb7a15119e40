import { WithQuotePlace } from '../common/api-models';
import { presentComparison, presentRequirement, presentRun, REQUIREMENT_STATUSES, RUN_STATUSES, SUB_REQUIREMENT_STATUSES, runStatus } from '@kb/events';
import {
  AppError,
  AsyncClient,
  type CallContext,
  type Logger,
  REPORT_PAGE_MAX,
  REQUIREMENT_MAX_CHARS,
  REVIEW_COMMENT_MAX_CHARS,
  REVIEWER_MAX_CHARS,
  RUN_NAME_MAX_CHARS,
  MAX_REQUIREMENTS_PER_RUN,
} from '@kb/common';
import { checkV1 } from '@kb/proto';
import { Body, Delete, Get, HttpCode, Inject, Param, Post, Put, Query, Res } from '@nestjs/common';
import { ApiBody, ApiOperation, ApiProperty, ApiPropertyOptional, ApiResponse, type ApiPropertyOptions } from '@nestjs/swagger';
import { ErrorCode } from '@kb/common';
import { ApiController, ApiEnvelope, ApiErrors, ApiFileResponse, ApiGet } from '../common/openapi';
import { Type } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsBoolean, IsIn, IsObject, IsOptional, IsString, IsUUID, ValidateNested } from 'class-validator';
import { RAW_RESPONSE } from '../common/envelope';
import { type DocumentsClient } from '../common/clients';
import { DOCUMENTS_CLIENT, LOGGER } from '../common/tokens';
import type { FastifyReply } from 'fastify';
import { PassThrough } from 'node:stream';
import { METADATA_MAX_BYTES, METADATA_MAX_DEPTH, METADATA_MAX_MEMBERS } from '../common/body-shape';
import { REPORT_CONTENT_TYPES, REPORT_FORMATS, type ReportFormat, reportSummary, writeReport } from './report';
import { Ctx } from '../common/http-context';
import { pageOf, pageRequest, PaginationQuery } from '../common/pagination.dto';
import { CharLength, EachItemAnObject, FreeFormObject, NonBlankText, OptionalUuid, OptionalUuidList, UuidParamPipe } from '../common/validation';

/** Nest injection token of the CheckRunsService gRPC client. */
export const CHECK_RUNS_CLIENT = Symbol('CheckRunsClient');
export type CheckRunsClient = AsyncClient<typeof checkV1.CheckRunsServiceService>;

/** Creating a run with 1,000 requirements writes them in one transaction; allow for a slow disk. */
const RUN_CALL_TIMEOUT_MS = 60_000;

export class RequirementInputDto {
  @NonBlankText('text', REQUIREMENT_MAX_CHARS, { example: 'Scaffolds must be inspected before each shift.', description: 'requirement text (not blank)' })
  text: string;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    maxProperties: METADATA_MAX_MEMBERS,
    example: { ref: 'A.8.13', title: 'Information backup', source_row: 7 },
    description:
      `any JSON object; returned as is with the requirement. Two keys are read: \`ref\` (the requirement's reference, a column of ` +
      `the reports) and \`title\` (a short title, at most 200 characters, read with the text as "title: text" when checking; ` +
      `any case of the key). At most ${METADATA_MAX_MEMBERS} keys and array items in all its levels, ` +
      `nested at most ${METADATA_MAX_DEPTH} levels, ${METADATA_MAX_BYTES} bytes (16 KiB) as JSON; more → 400 VALIDATION_ERROR`,
  })
  @IsOptional()
  @IsObject({ message: 'metadata must be a JSON object' })
  @FreeFormObject('metadata')
  metadata?: Record<string, unknown>;
}

export class CreateRunDto {
  @ApiProperty({ format: 'uuid', example: '0b6f3f1e-8a51-4a4e-9f37-2f7d6c1f4a10' })
  @IsUUID('all', { message: 'project_id must be a UUID' })
  project_id: string;

  @NonBlankText('name', RUN_NAME_MAX_CHARS, { example: 'Tender 2026-14 requirements', description: 'run name (not blank)' })
  name: string;

  @ApiProperty({ type: [RequirementInputDto], minItems: 1, maxItems: MAX_REQUIREMENTS_PER_RUN })
  @IsArray({ message: 'requirements must be an array' })
  @ArrayMinSize(1, { message: `requirements must have 1 to ${MAX_REQUIREMENTS_PER_RUN} items` })
  @ArrayMaxSize(MAX_REQUIREMENTS_PER_RUN, { message: `requirements must have 1 to ${MAX_REQUIREMENTS_PER_RUN} items` })
  @EachItemAnObject('requirements')
  @ValidateNested({ each: true })
  @Type(() => RequirementInputDto)
  requirements: RequirementInputDto[];

  @OptionalUuidList('handbook_ids', 'document ids (handbooks) to limit the check to')
  handbook_ids?: string[];
}

export class TriggerRunDto {
  @ApiPropertyOptional({ default: false, example: true, description: 're-check requirements already completed' })
  @IsOptional()
  @IsBoolean({ message: 'reprocess must be a boolean' })
  reprocess?: boolean;

  @ApiPropertyOptional({ default: false, example: false, description: 'one sub-requirement per requirement (its own text), for faster results' })
  @IsOptional()
  @IsBoolean({ message: 'skip_breakdown must be a boolean' })
  skip_breakdown?: boolean;
}

/** Body of PUT /api/v2/check/runs/{id}/requirements/{requirement_id}/review (decisions.md "Review of check results"). */
export class ReviewDto {
  @ApiProperty({ enum: ['pass', 'fail'], example: 'fail', description: "the person's decision on the requirement" })
  @IsIn(['pass', 'fail'], { message: 'decision must be one of: pass, fail' })
  decision: 'pass' | 'fail';

  @NonBlankText('reviewer', REVIEWER_MAX_CHARS, { example: 'Dana Reviewer', description: 'who decided (not blank)' })
  reviewer: string;

  @ApiPropertyOptional({
    type: String,
    nullable: true,
    maxLength: REVIEW_COMMENT_MAX_CHARS,
    example: 'The cited plan is the 2024 edition; the current one drops the shift inspection.',
  })
  @IsOptional()
  @IsString({ message: 'comment must be a string' })
  @CharLength(0, REVIEW_COMMENT_MAX_CHARS, { message: `comment must be at most ${REVIEW_COMMENT_MAX_CHARS} characters` })
  comment?: string | null;
}

/** Body of POST /api/v2/check/runs/{id}/rerun (decisions.md "Re-running and comparing check runs"). */
export class RerunRunDto {
  @NonBlankText('name', RUN_NAME_MAX_CHARS, {
    optional: true,
    example: 'Tender 2026-14 requirements, revision B',
    description: `name of the new run (not blank); default: the original's name + " (rerun)", clipped to ${RUN_NAME_MAX_CHARS} characters`,
  })
  name?: string;
}

/** Query of GET /api/v2/check/runs/{id}/compare. */
export class CompareRunsQuery {
  @ApiProperty({
    format: 'uuid',
    example: '3c2b1a09-8f7e-4d6c-9b5a-493827160f5e',
    description: 'the run to compare with: its results are `after`, those of `{id}` are `before`',
  })
  @IsUUID('all', { message: 'with must be a UUID' })
  with: string;
}

/** Query of GET /api/v2/check/runs/{id}/report (decisions.md "Reports"). */
export class ReportQuery {
  @ApiPropertyOptional({ enum: [...REPORT_FORMATS], default: 'xlsx', description: 'file format of the report' })
  @IsOptional()
  @IsIn([...REPORT_FORMATS], { message: `format must be one of: ${REPORT_FORMATS.join(', ')}` })
  format?: ReportFormat;
}

export class ListRunsQuery extends PaginationQuery {
  @OptionalUuid('project_id', { description: 'only runs of this project' })
  project_id?: string;
}

/**
 * The schema of a check source (a chunk a verdict rests on): the run routes' {@link SourceView} and
 * the verify route's `VerifySourceView` differ only in how `handbook_id` and `title` are documented.
 * @param handbookId the `handbook_id` property's OpenAPI options
 * @param title the `title` property's OpenAPI options
 */
export function checkSourceView(handbookId: ApiPropertyOptions, title: ApiPropertyOptions) {
  class SourceFields {
    @ApiProperty(handbookId) handbook_id: string;
    @ApiProperty({ example: '9d2b7c1a-3e4f-4a5b-8c6d-7e8f9a0b1c2d:12' }) node_id: string;
    @ApiProperty(title) title: string;
    @ApiProperty({ type: 'integer', nullable: true, example: 4 }) start_page: number | null;
    @ApiProperty({ type: 'integer', nullable: true, example: 5 }) end_page: number | null;
  }
  return WithQuotePlace(SourceFields, 'heading path of the chunk (outermost first), null when it is under no heading');
}

/** A source of a sub-requirement's verdict. */
export class SourceView extends checkSourceView({ example: '9d2b7c1a-3e4f-4a5b-8c6d-7e8f9a0b1c2d' }, { example: 'site-safety-plan.pdf' }) {}

export class SubRequirementView {
  @ApiProperty({ example: 'b3c1d2e4-5f60-4a7b-8c9d-0e1f2a3b4c5d' }) id: string;
  @ApiProperty({ example: 'a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d' }) requirement_id: string;
  @ApiProperty({ example: 'Scaffolds are inspected before each shift.' }) text: string;
  @ApiProperty({
    example: 'The plan requires a scaffold inspection at the start of every shift: "Scaffolds shall be inspected before each shift."',
    description: 'explanation and the quoted evidence',
  })
  justification: string;
  @ApiProperty({ minimum: 0, maximum: 1, example: 0.88, description: 'confidence' }) score: number;
  @ApiProperty({ enum: [...SUB_REQUIREMENT_STATUSES], example: 'comply' }) status: string;
  @ApiProperty({ type: [SourceView], nullable: true, description: 'null until the sub-requirement is judged' }) sources: SourceView[] | null;
}

export class ReviewView {
  @ApiProperty({ enum: ['pass', 'fail'], example: 'fail' }) decision: string;
  @ApiProperty({ type: String, nullable: true, example: 'The cited plan is the 2024 edition; the current one drops the shift inspection.' }) comment:
    string | null;
  @ApiProperty({ example: 'Dana Reviewer' }) reviewer: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-22T05:00:00.000Z' }) reviewed_at: string;
  @ApiProperty({ example: false, description: 'true when the requirement was checked again after this review' }) outdated: boolean;
}

export class ReviewSummaryView {
  @ApiProperty({ type: 'integer', minimum: 0, example: 3, description: 'completed requirements with a current (not outdated) review' }) reviewed: number;
  @ApiProperty({
    type: 'integer',
    minimum: 0,
    example: 9,
    description: "completed requirements passing: by the current review's decision, else by the machine's result",
  })
  passed: number;
  @ApiProperty({
    type: 'integer',
    minimum: 0,
    example: 3,
    description: "completed requirements failing: by the current review's decision, else by the machine's result",
  })
  failed: number;
}

export class RequirementView {
  @ApiProperty({ example: 'a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d' }) id: string;
  @ApiProperty({ format: 'uuid', example: '7e6d5c4b-3a29-4180-9f7e-6d5c4b3a2918' }) run_id: string;
  @ApiProperty({ example: 'Scaffolds must be inspected before each shift.' }) text: string;
  @ApiProperty({ type: 'integer', example: 0, description: '0-based position in the run' }) order_index: number;
  @ApiProperty({ enum: [...REQUIREMENT_STATUSES], example: 'completed' }) status: string;
  @ApiProperty({ type: 'object', additionalProperties: true, nullable: true, example: { clause: '4.2.1' } }) metadata: Record<string, unknown> | null;
  @ApiProperty({ type: [SubRequirementView] }) sub_requirements: SubRequirementView[];
  @ApiProperty({ type: ReviewView, nullable: true, description: "a person's decision next to the machine's result; null until reviewed" })
  review: ReviewView | null;
  @ApiProperty({ format: 'date-time', example: '2026-11-22T04:00:00.000Z' }) created_at: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-22T04:02:00.000Z' }) updated_at: string;
}

export class RunView {
  @ApiProperty({ format: 'uuid', example: '7e6d5c4b-3a29-4180-9f7e-6d5c4b3a2918' }) id: string;
  @ApiProperty({ example: 'Tender 2026-14 requirements' }) name: string;
  @ApiProperty({ example: '5a8c2d4e-1f3b-4c6d-9e8f-0a1b2c3d4e5f' }) org_id: string;
  @ApiProperty({ format: 'uuid', example: '0b6f3f1e-8a51-4a4e-9f37-2f7d6c1f4a10' }) project_id: string;
  @ApiProperty({ enum: [...RUN_STATUSES], example: 'completed' }) status: string;
  @ApiProperty({ type: 'integer', example: 12 }) total_requirements: number;
  @ApiProperty({ type: 'integer', example: 12 }) processed_requirements: number;
  @ApiProperty({ type: 'integer', example: 10 }) passed_requirements: number;
  @ApiProperty({ type: 'integer', example: 2 }) failed_requirements: number;
  @ApiProperty({ type: [String], example: ['9d2b7c1a-3e4f-4a5b-8c6d-7e8f9a0b1c2d'] }) handbook_ids: string[];
  @ApiProperty({ type: String, nullable: true, example: null, description: 'why the run failed (status failed)' }) error_message: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, example: '2026-11-22T04:01:00.000Z' }) processing_started_at: string | null;
  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    example: '2026-11-22T04:03:00.000Z',
    description: 'when the run left processing (completed, stopped or failed)',
  })
  processing_completed_at: string | null;
  @ApiProperty({ format: 'date-time', example: '2026-11-22T04:00:00.000Z' }) created_at: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-22T04:03:00.000Z' }) updated_at: string;
  @ApiProperty({
    type: String,
    format: 'uuid',
    nullable: true,
    example: null,
    description: 'the run this one re-runs (POST …/rerun); null for a run created directly',
  })
  source_run_id: string | null;
  @ApiProperty({ type: ReviewSummaryView, description: "counts with people's reviews applied (the *_requirements counters stay the machine's)" })
  review_summary: ReviewSummaryView;
}

export class RequirementOutcomeView {
  @ApiProperty({ enum: ['pass', 'fail', 'pending'], example: 'pass', description: "the machine's result (reviews play no part); pending = not completed" })
  result: string;
  @ApiProperty({
    type: Number,
    nullable: true,
    minimum: 0,
    maximum: 1,
    example: 0.91,
    description: 'lowest sub-requirement score; null when the requirement has no sub-requirement yet',
  })
  score: number | null;
  @ApiProperty({
    type: [String],
    example: ['Scaffolds shall be inspected before each shift.'],
    description: 'the quoted evidence of its sub-requirements, in order',
  })
  evidence: string[];
  @ApiProperty({ type: [SourceView], description: 'the sources of its sub-requirements in order, each chunk once' }) sources: SourceView[];
}

export class RequirementChangeView {
  @ApiProperty({ type: 'integer', example: 3, description: 'position in the `{id}` run (in the `with` run for a requirement only there)' }) order_index: number;
  @ApiProperty({ example: 'Scaffolds must be inspected before each shift.' }) text: string;
  @ApiProperty({ type: RequirementOutcomeView, nullable: true, description: 'in the `{id}` run; null when the requirement is only in the `with` run' })
  before: RequirementOutcomeView | null;
  @ApiProperty({ type: RequirementOutcomeView, nullable: true, description: 'in the `with` run; null when the requirement is only in the `{id}` run' })
  after: RequirementOutcomeView | null;
}

export class ComparisonSummaryView {
  @ApiProperty({ type: 'integer', minimum: 0, example: 10, description: 'matched requirements with the same result, score band and first source' })
  unchanged: number;
  @ApiProperty({
    type: 'integer',
    minimum: 0,
    example: 1,
    description: 'matched requirements whose result, score band (below / at or above 0.7) or first source changed',
  })
  changed: number;
  @ApiProperty({ type: 'integer', minimum: 0, example: 0, description: 'requirements of the `{id}` run with no match in the `with` run' }) only_in_run: number;
  @ApiProperty({ type: 'integer', minimum: 0, example: 0, description: 'requirements of the `with` run with no match in the `{id}` run' }) only_in_with: number;
}

export class RunComparisonView {
  @ApiProperty({ format: 'uuid', example: '7e6d5c4b-3a29-4180-9f7e-6d5c4b3a2918', description: 'the `{id}` run (before)' }) run_id: string;
  @ApiProperty({ format: 'uuid', example: '3c2b1a09-8f7e-4d6c-9b5a-493827160f5e', description: 'the `with` run (after)' }) with_run_id: string;
  @ApiProperty({ type: ComparisonSummaryView }) summary: ComparisonSummaryView;
  @ApiProperty({
    type: [RequirementChangeView],
    description: "changed requirements, then unmatched ones (before or after null): in the `{id}` run's order, then those only in `with` in its order",
  })
  changes: RequirementChangeView[];
}

export class RunDetailView extends RunView {
  @ApiProperty({ type: [RequirementView] }) requirements: RequirementView[];
}

export class TriggerView {
  @ApiProperty({ format: 'uuid', example: '7e6d5c4b-3a29-4180-9f7e-6d5c4b3a2918' }) run_id: string;
  @ApiProperty({ example: 'run-7e6d5c4b-1' }) task_id: string;
  @ApiProperty({ enum: ['processing', 'completed'], example: 'processing' }) status: string;
}

/** Check run and requirement as the API shows them: one presenter each, shared with the webhook payloads (@kb/events). */
export { presentComparison, presentRequirement, presentRun };

/** /api/v2/check/runs: batches of requirements checked in the background (service-api.md §4, decisions.md "Check"). */
@ApiController('Check', 'api/v2/check/runs')
export class CheckRunsController {
  constructor(
    @Inject(CHECK_RUNS_CLIENT) private readonly runs: CheckRunsClient,
    @Inject(DOCUMENTS_CLIENT) private readonly documents: DocumentsClient,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  @Post()
  @ApiOperation({ operationId: 'createCheckRun', summary: 'Create a check run (status pending; processing does not start)' })
  @ApiEnvelope(RunView, { status: 201, description: 'The run, status pending.' })
  @ApiErrors(ErrorCode.NOT_FOUND)
  async create(@Ctx() ctx: CallContext, @Body() body: CreateRunDto) {
    const run = await this.runs.createRun(
      {
        projectId: body.project_id,
        name: body.name,
        handbookIds: body.handbook_ids ?? [],
        requirements: body.requirements.map((r) => ({
          text: r.text,
          metadataJson: r.metadata === undefined || r.metadata === null ? '' : JSON.stringify(r.metadata),
        })),
      },
      { ...ctx, timeoutMs: RUN_CALL_TIMEOUT_MS },
    );
    return presentRun(run);
  }

  @ApiGet('', { operationId: 'listCheckRuns', summary: 'List check runs, newest first' }, RunView, { paginated: true })
  async list(@Ctx() ctx: CallContext, @Query() q: ListRunsQuery) {
    const res = await this.runs.listRuns({ projectId: q.project_id, ...pageRequest(q) }, ctx);
    return pageOf(q, res.runs.map(presentRun), res.total);
  }

  @ApiGet(':id', { operationId: 'getCheckRun', summary: 'Check run detail: counters, processing timestamps and all requirements' }, RunDetailView)
  async get(@Ctx() ctx: CallContext, @Param('id', UuidParamPipe) id: string) {
    const run = await this.runs.getRun({ id }, { ...ctx, timeoutMs: RUN_CALL_TIMEOUT_MS });
    return { ...presentRun(run), requirements: run.requirements.map(presentRequirement) };
  }

  @ApiGet(
    ':id/requirements',
    { operationId: 'listCheckRunRequirements', summary: 'Requirements of a run with their sub-requirements and metadata' },
    RequirementView,
    { list: true, description: 'Every requirement of the run, in order (not paginated).' },
  )
  async requirements(@Ctx() ctx: CallContext, @Param('id', UuidParamPipe) id: string) {
    const res = await this.runs.listRequirements({ id }, { ...ctx, timeoutMs: RUN_CALL_TIMEOUT_MS });
    return res.requirements.map(presentRequirement);
  }

  @Post(':id/trigger')
  @HttpCode(200)
  @ApiOperation({ operationId: 'triggerCheckRun', summary: 'Start processing: every requirement not completed (all with reprocess)' })
  @ApiBody({ type: TriggerRunDto, required: false })
  @ApiEnvelope(TriggerView)
  @ApiErrors(ErrorCode.CONFLICT)
  async trigger(@Ctx() ctx: CallContext, @Param('id', UuidParamPipe) id: string, @Body() body: TriggerRunDto = {}) {
    const res = await this.runs.triggerRun(
      { id, reprocess: body?.reprocess ?? false, skipBreakdown: body?.skip_breakdown ?? false },
      { ...ctx, timeoutMs: RUN_CALL_TIMEOUT_MS },
    );
    return { run_id: res.runId, task_id: res.taskId, status: runStatus.fromProto(res.status) };
  }

  @Post(':id/stop')
  @HttpCode(200)
  @ApiOperation({ operationId: 'stopCheckRun', summary: 'Stop a processing run (in-flight requirements return to pending)' })
  @ApiEnvelope(RunView)
  @ApiErrors(ErrorCode.CONFLICT)
  async stop(@Ctx() ctx: CallContext, @Param('id', UuidParamPipe) id: string) {
    return presentRun(await this.runs.stopRun({ id }, ctx));
  }

  @Post(':id/rerun')
  @ApiOperation({
    operationId: 'rerunCheckRun',
    summary:
      'Re-run a check run: a new pending run of the same project with the same requirements and handbook_ids (source_run_id names the original); trigger it to check against the knowledge scope as it is now',
  })
  @ApiBody({ type: RerunRunDto, required: false })
  @ApiEnvelope(RunView, { status: 201, description: 'The new run, status pending.' })
  async rerun(@Ctx() ctx: CallContext, @Param('id', UuidParamPipe) id: string, @Body() body: RerunRunDto = {}) {
    const run = await this.runs.rerunRun({ id, name: body?.name ?? undefined }, { ...ctx, timeoutMs: RUN_CALL_TIMEOUT_MS });
    return presentRun(run);
  }

  @ApiGet(
    ':id/compare',
    {
      operationId: 'compareCheckRuns',
      summary: "What changed between two runs' machine results: {id} is before, `with` is after; requirements matched by text, then order_index",
    },
    RunComparisonView,
  )
  async compare(@Ctx() ctx: CallContext, @Param('id', UuidParamPipe) id: string, @Query() q: CompareRunsQuery) {
    return presentComparison(await this.runs.compareRuns({ id, withId: q.with }, { ...ctx, timeoutMs: RUN_CALL_TIMEOUT_MS }));
  }

  @Put(':id/requirements/:requirement_id/review')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'setCheckRequirementReview',
    summary: "Review a completed requirement: a person's pass/fail decision next to the machine's (replaces an earlier review)",
  })
  @ApiEnvelope(RequirementView, { description: 'The requirement with its review.' })
  @ApiErrors(ErrorCode.CONFLICT)
  async setReview(
    @Ctx() ctx: CallContext,
    @Param('id', UuidParamPipe) id: string,
    @Param('requirement_id', UuidParamPipe) requirementId: string,
    @Body() body: ReviewDto,
  ) {
    const requirement = await this.runs.setReview(
      { runId: id, requirementId, decision: body.decision, reviewer: body.reviewer, comment: body.comment ?? undefined },
      ctx,
    );
    return presentRequirement(requirement);
  }

  @Delete(':id/requirements/:requirement_id/review')
  @HttpCode(204)
  @ApiOperation({ operationId: 'deleteCheckRequirementReview', summary: "Remove a completed requirement's review (204 also when it had none)" })
  @ApiResponse({ status: 204, description: 'Removed (or there was no review); empty body.' })
  @ApiErrors(ErrorCode.CONFLICT)
  async clearReview(
    @Ctx() ctx: CallContext,
    @Param('id', UuidParamPipe) id: string,
    @Param('requirement_id', UuidParamPipe) requirementId: string,
  ): Promise<void> {
    await this.runs.clearReview({ runId: id, requirementId }, ctx);
  }

  @Get(':id/report')
  @ApiOperation({
    operationId: 'getCheckRunReport',
    summary: 'Download the report of a run (XLSX, CSV or PDF): one row per requirement with its result, score, review, evidence and sources',
    description:
      "Any status but `pending` (409). Columns, in `order_index` order: `index` (the requirement's order_index), `requirement`, `ref` (`metadata.ref`), " +
      '`machine_result` (pass | fail | pending), `score` (lowest sub-requirement score), `review_decision` (`pass`/`fail`, ` (outdated)` when checked again after the review), ' +
      '`reviewer`, `comment`, `evidence` (verbatim quotes, one per line), `sources` (`file_name p.X-Y` joined by `; `). XLSX has a `Summary` sheet (project, run, status, dates, ' +
      'machine and reviewed counts) before the `Requirements` sheet; the PDF opens with the same summary; CSV is RFC 4180 with a header row and CRLF line ends. ' +
      'The file is streamed as it is written: an error after the first bytes ends the connection without a complete file.',
  })
  @ApiFileResponse(
    {
      [REPORT_CONTENT_TYPES.xlsx]: { binary: true },
      'text/csv': {
        example:
          'index,requirement,ref,machine_result,score,review_decision,reviewer,comment,evidence,sources\r\n0,Scaffolds must be inspected before each shift.,4.2.1,pass,0.82,fail,Dana Reviewer,The cited plan is out of date.,Scaffolds are inspected before every shift.,site-safety-plan.pdf p.4-4\r\n',
      },
      [REPORT_CONTENT_TYPES.pdf]: { binary: true },
    },
    {
      description: 'The report as an attachment, `Content-Type` of the format (`text/csv; charset=utf-8` for CSV).',
      headers: {
        'Content-Disposition': {
          description: 'attachment; filename="run-<id>.<xlsx|csv|pdf>"',
          example: 'attachment; filename="run-7e6d5c4b-3a29-4180-9f7e-6d5c4b3a2918.xlsx"',
        },
      },
    },
  )
  @ApiErrors(ErrorCode.CONFLICT)
  async report(@Ctx() ctx: CallContext, @Param('id', UuidParamPipe) id: string, @Query() q: ReportQuery, @Res() reply: FastifyReply) {
    const format = q.format ?? 'xlsx';
    const call = { ...ctx, timeoutMs: RUN_CALL_TIMEOUT_MS };
    // The first page answers 404/409 before any byte of the file is sent.
    const first = await this.runs.getReportPage({ id, offset: 0, limit: REPORT_PAGE_MAX }, call);
    const run = first.run!;
    const project = await this.documents.getProject({ id: run.projectId }, ctx).then(
      (p) => p.name,
      (err: unknown) => {
        if (err instanceof AppError && err.code === ErrorCode.NOT_FOUND) return run.projectId;
        throw err;
      },
    );
    const runs = this.runs;
    async function* pages() {
      yield first.requirements;
      for (
        let offset = first.requirements.length, last = first.requirements.length;
        last === REPORT_PAGE_MAX && offset < run.totalRequirements;
        offset += last
      ) {
        const page = await runs.getReportPage({ id, offset, limit: REPORT_PAGE_MAX }, call);
        last = page.requirements.length;
        yield page.requirements;
      }
    }
    const out = new PassThrough();
    const done = writeReport(format, reportSummary(run, project), pages(), out).catch((err: unknown) => {
      this.logger.error({ err, run_id: id, format }, 'check run report failed after its first bytes; connection closed');
      out.destroy(err as Error);
    });
    await reply
      .status(200)
      .header('Content-Type', REPORT_CONTENT_TYPES[format])
      .header('Content-Disposition', `attachment; filename="run-${run.id}.${format}"`)
      .send(out);
    await done;
    return RAW_RESPONSE;
  }
}

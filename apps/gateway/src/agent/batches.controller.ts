import { BATCH_STATUSES, type BatchStatus, batchStatus, batchQuestionStatus } from '@kb/events';
import { type CallContext, ErrorCode, MAX_BATCH_QUESTIONS, QUESTION_MAX_CHARS, BATCH_NAME_MAX_CHARS } from '@kb/common';
import { Body, Get, Inject, Param, Post, Query, Res } from '@nestjs/common';
import { ApiOperation, ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { stringify } from 'csv-stringify/sync';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsIn, IsOptional, IsString } from 'class-validator';
import type { FastifyReply } from 'fastify';
import { AccountsService } from '../accounts/accounts.service';
import { type AgentClient } from '../common/clients';
import { RAW_RESPONSE } from '../common/envelope';
import { Ctx } from '../common/http-context';
import { pageOf, pageRequest, PaginationQuery } from '../common/pagination.dto';
import { ACCOUNTS, AGENT_CLIENT } from '../common/tokens';
import { CharLength, OptionalUuid, UuidParamPipe } from '../common/validation';
import { ChatTypeField } from './agent.controller';
import { presentBatch, presentBatchResult, sourcesCell } from './presenters';
import { ApiController, ApiEnvelope, ApiErrors, ApiFileResponse, ApiGet } from '../common/openapi';
import { BatchDetailView, BatchView } from './agent-views';

export class CreateBatchDto {
  @ApiProperty({
    type: [String],
    minItems: 1,
    maxItems: MAX_BATCH_QUESTIONS,
    example: ['Are hard hats required on site?', 'How often are scaffolds inspected?'],
    description: `Each 1–${QUESTION_MAX_CHARS} characters.`,
  })
  @IsArray({ message: 'questions must be an array of strings' })
  @ArrayMinSize(1, { message: 'questions must have at least 1 item' })
  @ArrayMaxSize(MAX_BATCH_QUESTIONS, { message: `questions must have at most ${MAX_BATCH_QUESTIONS} items` })
  @IsString({ each: true, message: 'questions must contain only strings' })
  @CharLength(1, QUESTION_MAX_CHARS, { each: true, message: `each question must be 1 to ${QUESTION_MAX_CHARS} characters` })
  questions: string[];

  @ApiPropertyOptional({ maxLength: BATCH_NAME_MAX_CHARS, example: 'Site induction FAQ' })
  @IsOptional()
  @IsString({ message: 'name must be a string' })
  @CharLength(0, BATCH_NAME_MAX_CHARS, { message: `name must be at most ${BATCH_NAME_MAX_CHARS} characters` })
  name?: string;

  @OptionalUuid('project_id', { example: '0b6f3f1e-8a51-4a4e-9f37-2f7d6c1f4a10' })
  project_id?: string;

  @ChatTypeField('Omit to route each question (safety / project / general).')
  chat_type?: string;
}

export class ListBatchesQuery extends PaginationQuery {
  @OptionalUuid('project_id')
  project_id?: string;

  @ApiPropertyOptional({ enum: [...BATCH_STATUSES] })
  @IsOptional()
  @IsIn([...BATCH_STATUSES], { message: `status must be one of ${BATCH_STATUSES.join(', ')}` })
  status?: BatchStatus;
}

/** /api/v2/agent/batches: questions answered in the background, with CSV export. */
@ApiController('Agent', 'api/v2/agent/batches')
export class BatchesController {
  constructor(
    @Inject(AGENT_CLIENT) private readonly agent: AgentClient,
    @Inject(ACCOUNTS) private readonly accounts: AccountsService,
  ) {}

  @Post()
  @ApiOperation({ operationId: 'createBatch', summary: 'Create a batch query (status pending; answered in the background)' })
  @ApiEnvelope(BatchView, { status: 201, description: 'The batch summary.' })
  @ApiErrors(ErrorCode.AGENT_NOT_ENABLED, ErrorCode.NOT_FOUND)
  async create(@Ctx() ctx: CallContext, @Body() body: CreateBatchDto) {
    const safetyAssistantEnabled = await this.accounts.safetyAssistantEnabled(ctx.orgId);
    const b = await this.agent.createBatch(
      {
        questions: body.questions,
        // null reads as omitted (never the text "null"), as everywhere in the API.
        name: body.name ?? undefined,
        projectId: body.project_id ?? undefined,
        chatType: body.chat_type ?? undefined,
        safetyAssistantEnabled,
      },
      ctx,
    );
    return presentBatch(b);
  }

  @ApiGet('', { operationId: 'listBatches', summary: 'List batch queries, newest first (filter by project_id, status)' }, BatchView, {
    paginated: true,
    description: 'Batch summaries with pagination.',
  })
  async list(@Ctx() ctx: CallContext, @Query() q: ListBatchesQuery) {
    const r = await this.agent.listBatches(
      { projectId: q.project_id, status: q.status === undefined ? undefined : batchStatus.toProto(q.status), ...pageRequest(q) },
      ctx,
    );
    return pageOf(q, r.batches.map(presentBatch), r.total);
  }

  @ApiGet(':id', { operationId: 'getBatch', summary: 'Batch detail with the result of every question, in question order' }, BatchDetailView, {
    description: "The summary plus `results`, each with its answer's `confidence`.",
  })
  async get(@Ctx() ctx: CallContext, @Param('id', UuidParamPipe) id: string) {
    const b = await this.agent.getBatch({ id }, ctx);
    return { ...presentBatch(b), results: b.results.map(presentBatchResult) };
  }

  @Get(':id/export')
  @ApiOperation({
    operationId: 'exportBatch',
    summary: 'Export batch results as CSV (RFC 4180)',
    description:
      "Columns `index,question,status,answer,sources,error` (exactly the contract's header; each result's `confidence` is in the JSON detail only); `sources` = `file_name p.X-Y` joined by `; `. Works while the batch runs (unfinished rows show their status).",
  })
  @ApiFileResponse('text/csv', {
    description: 'The results as a CSV attachment (`text/csv; charset=utf-8`), one row per question, CRLF line ends.',
    example:
      'index,question,status,answer,sources,error\r\n0,Are hard hats required on site?,completed,"Yes: ""Hard hats are required at all times on site."" [1]",site-safety-plan.pdf p.4-4,\r\n',
    headers: {
      'Content-Disposition': {
        description: 'attachment; filename="batch-<id>.csv"',
        example: 'attachment; filename="batch-3f2a9c1e-0d4b-4e8f-9a7c-6b5d4e3f2a1c.csv"',
      },
    },
  })
  async export(@Ctx() ctx: CallContext, @Param('id', UuidParamPipe) id: string, @Res() reply: FastifyReply) {
    const b = await this.agent.getBatch({ id }, ctx);
    const csv = stringify(
      b.results.map((r) => [r.index, r.question, batchQuestionStatus.fromProto(r.status), r.answer ?? '', sourcesCell(r.citations), r.error ?? '']),
      { header: true, columns: ['index', 'question', 'status', 'answer', 'sources', 'error'], record_delimiter: '\r\n' },
    );
    await reply
      .status(200)
      .header('Content-Type', 'text/csv; charset=utf-8')
      .header('Content-Disposition', `attachment; filename="batch-${b.id}.csv"`)
      .send(csv);
    return RAW_RESPONSE;
  }
}

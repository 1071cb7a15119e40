import { CallContext, ErrorCode, QUESTION_MAX_CHARS } from '@kb/common';
import { Body, HttpCode, Inject, Post } from '@nestjs/common';
import { ApiOperation, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsInt, IsOptional, IsUUID, Matches, Max, Min } from 'class-validator';
import { AgentClient } from '../common/clients';
import { Ctx } from '../common/http-context';
import { NonBlankText, OptionalUuidList } from '../common/validation';
import { AccountsService } from '../accounts/accounts.service';
import { ACCOUNTS, AGENT_CLIENT } from '../common/tokens';
import { presentCitation, presentConfidence, presentUsage } from './presenters';
import { ApiController, ApiEnvelope, ApiErrors } from '../common/openapi';
import { AnswerView } from './agent-views';

export const CHAT_TYPES = ['general', 'project', 'safety'];

export class QueryDto {
  @NonBlankText('question', QUESTION_MAX_CHARS, { example: 'Are hard hats required on site?', description: 'the question (not blank)' })
  @Matches(/\S/, { message: 'question must not be blank (only whitespace)' })
  question: string;

  @ApiPropertyOptional({ format: 'uuid', example: '0b6f3f1e-8a51-4a4e-9f37-2f7d6c1f4a10' })
  @IsOptional()
  @IsUUID('all', { message: 'project_id must be a UUID' })
  project_id?: string;

  @OptionalUuidList('document_ids')
  document_ids?: string[];

  @ApiPropertyOptional({ enum: CHAT_TYPES, example: 'project', description: 'Omit to route the question (safety / project / general).' })
  @IsOptional()
  @IsIn(CHAT_TYPES, { message: `chat_type must be one of ${CHAT_TYPES.join(', ')}` })
  chat_type?: string;

  @ApiPropertyOptional({ minimum: 1, maximum: 20, default: 8, example: 5 })
  @IsOptional()
  @IsInt({ message: 'top_k must be an integer' })
  @Min(1, { message: 'top_k must be at least 1' })
  @Max(20, { message: 'top_k must be at most 20' })
  top_k?: number;
}

/** /api/v2/agent: grounded answers with citations. */
@ApiController('Agent', 'api/v2/agent')
export class AgentController {
  constructor(
    @Inject(AGENT_CLIENT) private readonly agent: AgentClient,
    @Inject(ACCOUNTS) private readonly accounts: AccountsService,
  ) {}

  @Post('query')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'queryAgent',
    summary: 'Ask one question; get an answer with inline [n] markers and citations',
    description:
      'Stateless. Routed like chat when chat_type is omitted. Every citation quote is verbatim from its chunk; when the passages do not answer the question → a plain "not found" answer and no citations. `confidence` (0–1, calibrated): below 0.7 the sources may not answer the question.',
  })
  @ApiEnvelope(AnswerView, { description: '`{ answer, citations, agent, model, usage, confidence }`' })
  @ApiErrors(ErrorCode.AGENT_NOT_ENABLED, ErrorCode.NOT_FOUND)
  async query(@Ctx() ctx: CallContext, @Body() body: QueryDto) {
    const org = await this.accounts.getOrganization(ctx.orgId);
    const a = await this.agent.query(
      {
        question: body.question,
        projectId: body.project_id ?? undefined,
        documentIds: body.document_ids ?? [],
        chatType: body.chat_type ?? undefined,
        topK: body.top_k ?? 8,
        safetyAssistantEnabled: org?.safetyAssistantEnabled ?? false,
      },
      { ...ctx, timeoutMs: 5 * 60 * 1000 },
    );
    return {
      answer: a.answer,
      citations: a.citations.map(presentCitation),
      agent: a.agent,
      model: a.model,
      usage: presentUsage(a.usage),
      confidence: presentConfidence(a.confidence),
    };
  }
}

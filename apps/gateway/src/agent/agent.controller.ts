import { type CallContext, ErrorCode, QUESTION_MAX_CHARS } from '@kb/common';
import { applyDecorators, Body, HttpCode, Inject, Post } from '@nestjs/common';
import { ApiOperation, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsInt, IsOptional, Matches, Max, Min } from 'class-validator';
import { type AgentClient } from '../common/clients';
import { Ctx } from '../common/http-context';
import { NonBlankText, OptionalUuid, OptionalUuidList } from '../common/validation';
import { AccountsService } from '../accounts/accounts.service';
import { ACCOUNTS, AGENT_CLIENT } from '../common/tokens';
import { presentAnswerFields } from './presenters';
import { ApiController, ApiEnvelope, ApiErrors } from '../common/openapi';
import { AnswerView } from './agent-views';

export const CHAT_TYPES = ['general', 'project', 'safety'];

/** Passages an answer is grounded on when the request gives no `top_k`. */
export const TOP_K_DEFAULT = 8;
/** The most passages a request may ask for (`top_k`). */
export const TOP_K_MAX = 20;

/**
 * The optional `chat_type` body field of the agent routes: one of CHAT_TYPES (400 otherwise).
 * @param description OpenAPI description: what omitting it does on that route.
 */
export function ChatTypeField(description: string): PropertyDecorator {
  return applyDecorators(
    IsIn(CHAT_TYPES, { message: `chat_type must be one of ${CHAT_TYPES.join(', ')}` }),
    IsOptional(),
    ApiPropertyOptional({ enum: CHAT_TYPES, example: 'project', description }),
  );
}

/**
 * The optional `top_k` body field of the agent routes: an integer from 1 to TOP_K_MAX, default
 * TOP_K_DEFAULT (400 otherwise). Rules registered in the order of the stack they replace.
 * @param example OpenAPI example.
 */
export function TopKField(example: number): PropertyDecorator {
  return applyDecorators(
    Max(TOP_K_MAX, { message: `top_k must be at most ${TOP_K_MAX}` }),
    Min(1, { message: 'top_k must be at least 1' }),
    IsInt({ message: 'top_k must be an integer' }),
    IsOptional(),
    ApiPropertyOptional({ minimum: 1, maximum: TOP_K_MAX, default: TOP_K_DEFAULT, example }),
  );
}

export class QueryDto {
  @NonBlankText('question', QUESTION_MAX_CHARS, { example: 'Are hard hats required on site?', description: 'the question (not blank)' })
  @Matches(/\S/, { message: 'question must not be blank (only whitespace)' })
  question: string;

  @OptionalUuid('project_id', { example: '0b6f3f1e-8a51-4a4e-9f37-2f7d6c1f4a10' })
  project_id?: string;

  @OptionalUuidList('document_ids')
  document_ids?: string[];

  @ChatTypeField('Omit to route the question (safety / project / general).')
  chat_type?: string;

  @TopKField(5)
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
    const safetyAssistantEnabled = await this.accounts.safetyAssistantEnabled(ctx.orgId);
    const a = await this.agent.query(
      {
        question: body.question,
        projectId: body.project_id ?? undefined,
        documentIds: body.document_ids ?? [],
        chatType: body.chat_type ?? undefined,
        topK: body.top_k ?? TOP_K_DEFAULT,
        safetyAssistantEnabled,
      },
      { ...ctx, timeoutMs: 5 * 60 * 1000 },
    );
    return { answer: a.answer, ...presentAnswerFields(a) };
  }
}

import { type CallContext, pickSnakeFields, REQUIREMENT_MAX_CHARS } from '@kb/common';
import { Body, HttpCode, Inject, Post } from '@nestjs/common';
import { ApiOperation, ApiProperty } from '@nestjs/swagger';
import { ErrorCode } from '@kb/common';
import { ApiController, ApiEnvelope, ApiErrors } from '../common/openapi';
import { IsString, IsUUID } from 'class-validator';
import { type CheckClient } from '../common/clients';
import { Ctx } from '../common/http-context';
import { CharLength, OptionalUuidList } from '../common/validation';
import { CHECK_CLIENT } from '../common/tokens';
import { presentSource } from '@kb/events';
import { checkSourceView } from './check-runs.controller';

/** Verify is synchronous and may take up to 5 minutes (service-api.md §8). */
export const VERIFY_TIMEOUT_MS = 5 * 60 * 1000;

/** A source of the verify verdict. */
export class VerifySourceView extends checkSourceView(
  { format: 'uuid', example: '9d2b7c1a-3e4f-4a5b-8c6d-7e8f9a0b1c2d' },
  { example: 'site-safety-plan.pdf', description: 'source document name' },
) {}

export class VerifyHandbookView {
  @ApiProperty({ format: 'uuid', example: '9d2b7c1a-3e4f-4a5b-8c6d-7e8f9a0b1c2d' }) id: string;
  @ApiProperty({ example: 'site-safety-plan.pdf' }) name: string;
}

/** The single-requirement verdict (service-api.md §2 "Single-requirement verdict"). */
export class VerdictView {
  @ApiProperty({ enum: ['COMPLIANT', 'CONTRADICTS', 'NOT_FOUND'], example: 'COMPLIANT' }) verdict: string;
  @ApiProperty({ minimum: 0, maximum: 1, example: 0.86, description: '0 to 1; below 0.7 suggests insufficient evidence' }) confidence: number;
  @ApiProperty({
    example: 'Hard hats are required at all times on site.',
    description: 'verbatim quote from the source document supporting the verdict (empty when NOT_FOUND)',
  })
  evidence: string;
  @ApiProperty({ example: 'The site safety plan requires hard hats for everyone on site.' }) explanation: string;
  @ApiProperty({ type: String, nullable: true, example: null, description: 'suggested action if not compliant; null if compliant' }) recommendation:
    string | null;
  @ApiProperty({ type: [VerifySourceView] }) sources: VerifySourceView[];
  @ApiProperty({ type: VerifyHandbookView, nullable: true, description: 'the handbook checked against; null when no single handbook' })
  handbook: VerifyHandbookView | null;
}

export class VerifyDto {
  @ApiProperty({ format: 'uuid', example: '0b6f3f1e-8a51-4a4e-9f37-2f7d6c1f4a10' })
  @IsUUID('all', { message: 'project_id must be a UUID' })
  project_id: string;

  @ApiProperty({ minLength: 1, maxLength: REQUIREMENT_MAX_CHARS, example: 'All workers on site must wear a hard hat.' })
  @IsString({ message: 'requirement must be a string' })
  @CharLength(1, REQUIREMENT_MAX_CHARS, { message: `requirement must be 1 to ${REQUIREMENT_MAX_CHARS} characters` })
  requirement: string;

  @OptionalUuidList('handbook_ids', 'document ids (handbooks) to limit the check to')
  handbook_ids?: string[];
}

/** /api/v2/check: compliance verification. */
@ApiController('Check', 'api/v2/check')
export class CheckController {
  constructor(@Inject(CHECK_CLIENT) private readonly check: CheckClient) {}

  @Post('verify')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'verifyRequirement',
    summary: 'Check one requirement against the project documents (synchronous, up to 5 minutes)',
    description: 'COMPLIANT: the documents satisfy the requirement; CONTRADICTS: they contradict it; NOT_FOUND: no evidence for or against.',
  })
  @ApiEnvelope(VerdictView, { description: 'The verdict with its evidence and sources.' })
  @ApiErrors(ErrorCode.NOT_FOUND)
  async verify(@Ctx() ctx: CallContext, @Body() body: VerifyDto) {
    const v = await this.check.verify(
      { projectId: body.project_id, requirement: body.requirement, handbookIds: body.handbook_ids ?? [] },
      { ...ctx, timeoutMs: VERIFY_TIMEOUT_MS },
    );
    return {
      ...pickSnakeFields(v, ['verdict', 'confidence', 'evidence', 'explanation', 'recommendation'], null),
      sources: v.sources.map(presentSource),
      handbook: v.handbook ? { id: v.handbook.id, name: v.handbook.name } : null,
    };
  }
}

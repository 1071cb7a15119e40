import { CallContext } from '@kb/common';
import { Body, Controller, HttpCode, Inject, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiProperty, ApiTags } from '@nestjs/swagger';
import { IsString, IsUUID, Length } from 'class-validator';
import { CheckClient } from '../common/clients';
import { Ctx } from '../common/http-context';
import { OptionalUuidList } from '../common/validation';
import { CHECK_CLIENT } from '../common/tokens';
import { presentSource } from './sources';

/** Verify is synchronous and may take up to 5 minutes (service-api.md §8). */
export const VERIFY_TIMEOUT_MS = 5 * 60 * 1000;

export class VerifyDto {
  @ApiProperty({ format: 'uuid' })
  @IsUUID('all', { message: 'project_id must be a UUID' })
  project_id: string;

  @ApiProperty({ minLength: 1, maxLength: 5000 })
  @IsString({ message: 'requirement must be a string' })
  @Length(1, 5000, { message: 'requirement must be 1 to 5000 characters' })
  requirement: string;

  @OptionalUuidList('handbook_ids', 'document ids (handbooks) to limit the check to')
  handbook_ids?: string[];
}

/** /api/v2/check: compliance verification. */
@ApiTags('Check')
@ApiBearerAuth()
@Controller('api/v2/check')
export class CheckController {
  constructor(@Inject(CHECK_CLIENT) private readonly check: CheckClient) {}

  @Post('verify')
  @HttpCode(200)
  async verify(@Ctx() ctx: CallContext, @Body() body: VerifyDto) {
    const v = await this.check.verify(
      { projectId: body.project_id, requirement: body.requirement, handbookIds: body.handbook_ids ?? [] },
      { ...ctx, timeoutMs: VERIFY_TIMEOUT_MS },
    );
    return {
      verdict: v.verdict,
      confidence: v.confidence,
      evidence: v.evidence,
      explanation: v.explanation,
      recommendation: v.recommendation ?? null,
      sources: v.sources.map(presentSource),
      handbook: v.handbook ? { id: v.handbook.id, name: v.handbook.name } : null,
    };
  }
}

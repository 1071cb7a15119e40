import { AppError, CallContext } from '@kb/common';
import { Controller, Get, Inject } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { OrganizationView } from '../common/api-models';
import { ApiEnvelope } from '../common/openapi';
import { AccountsService } from '../accounts/accounts.service';
import { Ctx } from '../common/http-context';
import { ACCOUNTS } from '../common/tokens';

/** GET /api/v2/organization: the organization of the API key. */
@ApiTags('Organization')
@ApiBearerAuth()
@Controller('api/v2/organization')
export class OrganizationController {
  constructor(@Inject(ACCOUNTS) private readonly accounts: AccountsService) {}

  @Get()
  @ApiOperation({ summary: 'The organization of the API key' })
  @ApiEnvelope(OrganizationView)
  async get(@Ctx() ctx: CallContext) {
    const org = await this.accounts.getOrganization(ctx.orgId);
    if (!org) throw AppError.notFound('Organization not found; the API key may be corrupted.');
    return { id: org.id, name: org.name };
  }
}

import { AppError, CallContext } from '@kb/common';
import { Controller, Get, Inject } from '@nestjs/common';
import { ApiBearerAuth, ApiTags } from '@nestjs/swagger';
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
  async get(@Ctx() ctx: CallContext) {
    const org = await this.accounts.getOrganization(ctx.orgId);
    if (!org) throw AppError.notFound('Organization not found; the API key may be corrupted.');
    return { id: org.id, name: org.name };
  }
}

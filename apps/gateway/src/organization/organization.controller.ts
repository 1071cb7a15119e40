import { AppError, ErrorCode } from '@kb/common';
import { Req } from '@nestjs/common';
import { OrganizationView } from '../common/api-models';
import { ApiController, ApiErrors, ApiGet } from '../common/openapi';
import { type GatewayRequest } from '../common/http-context';

/** GET /api/v2/organization: the organization of the API key. */
@ApiController('Organization', 'api/v2/organization')
export class OrganizationController {
  @ApiGet('', { operationId: 'getOrganization', summary: 'The organization of the API key' }, OrganizationView)
  @ApiErrors(ErrorCode.NOT_FOUND)
  get(@Req() req: GatewayRequest) {
    // The authenticated principal carries the organization (key lookup joined with it, cached).
    const principal = req.kb?.principal;
    if (!principal) throw AppError.notFound('Organization not found.');
    return { id: principal.orgId, name: principal.orgName };
  }
}

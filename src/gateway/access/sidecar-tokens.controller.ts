import { Body, Controller, Delete, Get, Param, Post } from '@nestjs/common';
import { ApiBadRequestResponse, ApiCreatedResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminPrincipal } from '../common/admin-principal';
import { AdminAuth, CurrentAdmin } from '../../core/common/auth-decorators';
import { ErrorBody } from '../../core/common/error-body.dto';
import { CreatedSidecarTokenView, CreateSidecarTokenDto, SidecarTokenListView, SidecarTokenView } from './sidecar-tokens.dto';
import { IssuedCredentialsService } from './issued-credentials.service';

@ApiTags('sidecar')
@AdminAuth()
@Controller('admin/sidecar-tokens')
export class SidecarTokensController {
  constructor(private readonly issued: IssuedCredentialsService) {}

  @Post()
  @ApiOperation({
    summary: 'Issue a sidecar token; the response carries the token, shown only once',
    description: 'A sidecar sends it as X-Admin-Token (its ADMIN_TOKEN variable). It fetches the bundle and ingests audit; every other admin route refuses it.',
  })
  @ApiCreatedResponse({ type: CreatedSidecarTokenView })
  @ApiBadRequestResponse({ description: 'Invalid field (named in the message)', type: ErrorBody })
  async create(@CurrentAdmin() admin: AdminPrincipal, @Body() dto: CreateSidecarTokenDto): Promise<CreatedSidecarTokenView> {
    const { id, secret, name, createdAt } = await this.issued.create('sidecar_token', admin, dto.name);
    return { id, token: secret, name, createdAt };
  }

  @Get()
  @ApiOperation({ summary: 'List the organization’s sidecar tokens (never the tokens themselves)' })
  @ApiOkResponse({ type: SidecarTokenListView })
  async list(@CurrentAdmin() admin: AdminPrincipal): Promise<SidecarTokenListView> {
    return { sidecarTokens: await this.issued.list('sidecar_token', admin) };
  }

  @Delete(':id')
  @ApiOperation({ summary: 'Revoke a sidecar token: its next bundle fetch or audit batch is refused (401)' })
  @ApiOkResponse({ type: SidecarTokenView })
  @ApiNotFoundResponse({ description: 'No such token in this organization', type: ErrorBody })
  revoke(@CurrentAdmin() admin: AdminPrincipal, @Param('id') id: string): Promise<SidecarTokenView> {
    return this.issued.revoke('sidecar_token', admin, id);
  }
}

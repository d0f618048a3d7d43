import { Body, Controller, Delete, Get, Param, Post } from '@nestjs/common';
import { ApiBadRequestResponse, ApiCreatedResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminPrincipal } from '../common/admin-principal';
import { AdminAuth, CurrentAdmin } from '../../core/common/auth-decorators';
import { ErrorBody } from '../../core/common/error-body.dto';
import { CreatedSidecarTokenView, CreateSidecarTokenDto, SidecarTokenListView, SidecarTokenView } from './sidecar-tokens.dto';
import { SidecarTokensService } from './sidecar-tokens.service';

@ApiTags('sidecar')
@AdminAuth()
@Controller('admin/sidecar-tokens')
export class SidecarTokensController {
  constructor(private readonly tokens: SidecarTokensService) {}

  @Post()
  @ApiOperation({
    summary: 'Issue a sidecar token; the response carries the token, shown only once',
    description: 'A sidecar sends it as X-Admin-Token (its ADMIN_TOKEN variable). It fetches the bundle and ingests audit; every other admin route refuses it.',
  })
  @ApiCreatedResponse({ type: CreatedSidecarTokenView })
  @ApiBadRequestResponse({ description: 'Invalid field (named in the message)', type: ErrorBody })
  create(@CurrentAdmin() admin: AdminPrincipal, @Body() dto: CreateSidecarTokenDto): Promise<CreatedSidecarTokenView> {
    return this.tokens.create(admin, dto);
  }

  @Get()
  @ApiOperation({ summary: 'List the organization’s sidecar tokens (never the tokens themselves)' })
  @ApiOkResponse({ type: SidecarTokenListView })
  async list(@CurrentAdmin() admin: AdminPrincipal): Promise<SidecarTokenListView> {
    return { sidecarTokens: await this.tokens.list(admin) };
  }

  @Delete(':id')
  @ApiOperation({ summary: 'Revoke a sidecar token: its next bundle fetch or audit batch is refused (401)' })
  @ApiOkResponse({ type: SidecarTokenView })
  @ApiNotFoundResponse({ description: 'No such token in this organization', type: ErrorBody })
  revoke(@CurrentAdmin() admin: AdminPrincipal, @Param('id') id: string): Promise<SidecarTokenView> {
    return this.tokens.revoke(admin, id);
  }
}

import { Body, Controller, Delete, Get, HttpCode, Param, Post } from '@nestjs/common';
import { ApiBadRequestResponse, ApiConflictResponse, ApiCreatedResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminPrincipal } from '../common/admin-principal';
import { AdminAuth, CurrentAdmin } from '../../core/common/auth-decorators';
import { ErrorBody } from '../../core/common/error-body.dto';
import { OidcClientListView, OidcClientView, RegisterOidcClientDto } from './managed-identity.dto';
import { OidcClientsService } from './oidc-clients.service';

@ApiTags('identity')
@AdminAuth()
@Controller('admin/oidc-clients')
export class OidcClientsController {
  constructor(private readonly clients: OidcClientsService) {}

  @Post()
  @ApiOperation({ summary: 'Register a managed-identity client: bearer tokens of OIDC_ISSUER naming this client id act for this organization' })
  @ApiCreatedResponse({ type: OidcClientView })
  @ApiBadRequestResponse({ description: 'Invalid field (named in the message)', type: ErrorBody })
  @ApiConflictResponse({ description: 'The client id is already registered', type: ErrorBody })
  register(@CurrentAdmin() admin: AdminPrincipal, @Body() dto: RegisterOidcClientDto): Promise<OidcClientView> {
    return this.clients.register(admin, dto);
  }

  @Get()
  @ApiOperation({ summary: 'The organization’s managed-identity clients' })
  @ApiOkResponse({ type: OidcClientListView })
  async list(@CurrentAdmin() admin: AdminPrincipal): Promise<OidcClientListView> {
    return { clients: await this.clients.list(admin) };
  }

  @Delete(':clientId')
  @HttpCode(200)
  @ApiOperation({ summary: 'Remove a managed-identity client: its tokens stop mapping to this organization' })
  @ApiOkResponse({ type: OidcClientView })
  @ApiNotFoundResponse({ description: 'No such client in this organization', type: ErrorBody })
  remove(@CurrentAdmin() admin: AdminPrincipal, @Param('clientId') clientId: string): Promise<OidcClientView> {
    return this.clients.remove(admin, clientId);
  }
}

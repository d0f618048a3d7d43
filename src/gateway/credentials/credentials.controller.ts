import { Body, Controller, Delete, Get, HttpCode, Param, Post } from '@nestjs/common';
import { ApiBadRequestResponse, ApiConflictResponse, ApiCreatedResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminPrincipal } from '../common/admin-principal';
import { AdminAuth, CurrentAdmin } from '../../core/common/auth-decorators';
import { ErrorBody } from '../../core/common/error-body.dto';
import { CreateCredentialDto, CredentialListView, CredentialView, RotateCredentialDto } from './credentials.dto';
import { CredentialsService } from './credentials.service';

@ApiTags('credentials')
@AdminAuth()
@Controller('admin/credentials')
export class CredentialsController {
  constructor(private readonly credentials: CredentialsService) {}

  @Post()
  @ApiOperation({ summary: 'Store an upstream credential for a proxy route or an MCP server; the gateway adds it to requests it forwards there after an allow' })
  @ApiCreatedResponse({ type: CredentialView })
  @ApiBadRequestResponse({ description: 'Invalid field, a route or MCP server that does not exist, or no CREDENTIALS_KEY_FILE', type: ErrorBody })
  @ApiConflictResponse({ description: 'The route already has an active credential', type: ErrorBody })
  create(@CurrentAdmin() admin: AdminPrincipal, @Body() dto: CreateCredentialDto): Promise<CredentialView> {
    return this.credentials.create(admin, dto);
  }

  @Get()
  @ApiOperation({ summary: 'List the organization’s upstream credentials (never their values)' })
  @ApiOkResponse({ type: CredentialListView })
  async list(@CurrentAdmin() admin: AdminPrincipal): Promise<CredentialListView> {
    return { credentials: await this.credentials.list(admin) };
  }

  @Get(':id')
  @ApiOperation({ summary: 'One upstream credential (never its value)' })
  @ApiOkResponse({ type: CredentialView })
  @ApiNotFoundResponse({ description: 'No such credential in this organization', type: ErrorBody })
  get(@CurrentAdmin() admin: AdminPrincipal, @Param('id') id: string): Promise<CredentialView> {
    return this.credentials.get(admin, id);
  }

  @Post(':id/rotate')
  @HttpCode(200)
  @ApiOperation({ summary: 'Replace a credential’s value, in force on every gateway instance before the answer' })
  @ApiOkResponse({ type: CredentialView })
  @ApiNotFoundResponse({ description: 'No such credential in this organization', type: ErrorBody })
  @ApiConflictResponse({ description: 'The credential is revoked', type: ErrorBody })
  rotate(@CurrentAdmin() admin: AdminPrincipal, @Param('id') id: string, @Body() dto: RotateCredentialDto): Promise<CredentialView> {
    return this.credentials.rotate(admin, id, dto);
  }

  @Delete(':id')
  @ApiOperation({ summary: 'Revoke a credential: no longer injected, its value erased' })
  @ApiOkResponse({ type: CredentialView })
  @ApiNotFoundResponse({ description: 'No such credential in this organization', type: ErrorBody })
  revoke(@CurrentAdmin() admin: AdminPrincipal, @Param('id') id: string): Promise<CredentialView> {
    return this.credentials.revoke(admin, id);
  }
}

import { Body, Controller, Delete, Get, Param, Post } from '@nestjs/common';
import { ApiBadRequestResponse, ApiCreatedResponse, ApiForbiddenResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminPrincipal } from '../common/admin-principal';
import { AdminAuth, CurrentAdmin } from '../../core/common/auth-decorators';
import { ErrorBody, PlanLimitErrorBody } from '../../core/common/error-body.dto';
import { ApiKeyListView, ApiKeyView, CreateApiKeyDto, CreatedApiKeyView } from './api-keys.dto';
import { IssuedCredentialsService } from './issued-credentials.service';

@ApiTags('api-keys')
@AdminAuth()
@Controller('admin/api-keys')
export class ApiKeysController {
  constructor(private readonly issued: IssuedCredentialsService) {}

  @Post()
  @ApiOperation({ summary: 'Issue an adapter API key; the response carries the key, shown only once' })
  @ApiCreatedResponse({ type: CreatedApiKeyView })
  @ApiBadRequestResponse({ description: 'Invalid field (named in the message)', type: ErrorBody })
  @ApiForbiddenResponse({ description: 'plan_limit_exceeded: admin tokens and API keys count against teamMembers', type: PlanLimitErrorBody })
  async create(@CurrentAdmin() admin: AdminPrincipal, @Body() dto: CreateApiKeyDto): Promise<CreatedApiKeyView> {
    const { id, secret, name, createdAt } = await this.issued.create('api_key', admin, dto.name);
    return { id, key: secret, name, createdAt };
  }

  @Get()
  @ApiOperation({ summary: 'List the organization’s API keys (never the keys themselves)' })
  @ApiOkResponse({ type: ApiKeyListView })
  async list(@CurrentAdmin() admin: AdminPrincipal): Promise<ApiKeyListView> {
    return { apiKeys: await this.issued.list('api_key', admin) };
  }

  @Delete(':id')
  @ApiOperation({ summary: 'Revoke an API key, at once on every gateway instance' })
  @ApiOkResponse({ type: ApiKeyView })
  @ApiNotFoundResponse({ description: 'No such key in this organization', type: ErrorBody })
  revoke(@CurrentAdmin() admin: AdminPrincipal, @Param('id') id: string): Promise<ApiKeyView> {
    return this.issued.revoke('api_key', admin, id);
  }
}

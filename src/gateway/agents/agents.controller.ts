import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiForbiddenResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';
import { AdminPrincipal } from '../common/admin-principal';
import { AdminAuth, CurrentAdmin } from '../../core/common/auth-decorators';
import { ErrorBody, PlanLimitErrorBody } from '../../core/common/error-body.dto';
import { AgentListView, AgentView, CreateAgentDto, CreatedAgentView, ListAgentsQueryDto, UpdateAgentDto } from './agents.dto';
import { AgentsService } from './agents.service';

@ApiTags('agents')
@AdminAuth()
@Controller('admin/agents')
export class AgentsController {
  constructor(private readonly agents: AgentsService) {}

  @Get()
  @ApiOperation({ summary: 'List the organization’s agents (tokens are never listed)' })
  @ApiOkResponse({ type: AgentListView })
  @ApiBadRequestResponse({ description: 'includeRevoked other than true or false', type: ErrorBody })
  async list(@CurrentAdmin() admin: AdminPrincipal, @Query() query: ListAgentsQueryDto): Promise<AgentListView> {
    return { agents: await this.agents.list(admin, query.includeRevoked) };
  }

  @Post()
  @ApiOperation({ summary: 'Create an agent; the response carries its token, shown only once' })
  @ApiCreatedResponse({ type: CreatedAgentView })
  @ApiBadRequestResponse({ description: 'Invalid field (named in the message)', type: ErrorBody })
  @ApiForbiddenResponse({ description: 'plan_limit_exceeded: the plan’s agent limit is reached', type: PlanLimitErrorBody })
  create(@CurrentAdmin() admin: AdminPrincipal, @Body() dto: CreateAgentDto): Promise<CreatedAgentView> {
    return this.agents.create(admin, dto);
  }

  @Get(':id')
  @ApiOperation({ summary: 'Get one agent' })
  @ApiOkResponse({ type: AgentView })
  @ApiNotFoundResponse({ description: 'No such agent in this organization', type: ErrorBody })
  get(@CurrentAdmin() admin: AdminPrincipal, @Param('id') id: string): Promise<AgentView> {
    return this.agents.get(admin, id);
  }

  @Patch(':id')
  @ApiOperation({ summary: 'Change name, trustTier, tags or metadata; only supplied fields change (since 1.1.0)' })
  @ApiOkResponse({ type: AgentView })
  @ApiBadRequestResponse({ description: 'Invalid trust tier or malformed request', type: ErrorBody })
  @ApiForbiddenResponse({ description: 'The agent belongs to a different organization', type: ErrorBody })
  @ApiNotFoundResponse({ description: 'Agent not found', type: ErrorBody })
  @ApiConflictResponse({ description: 'agent_revoked: a revoked agent cannot change', type: ErrorBody })
  update(@CurrentAdmin() admin: AdminPrincipal, @Param('id') id: string, @Body() dto: UpdateAgentDto): Promise<AgentView> {
    return this.agents.update(admin, id, dto);
  }

  @Delete(':id')
  @HttpCode(200)
  @ApiOperation({ summary: 'Revoke an agent: immediate and permanent; its tokens stop working on every instance' })
  @ApiOkResponse({ type: AgentView })
  @ApiNotFoundResponse({ description: 'No such agent in this organization', type: ErrorBody })
  revoke(@CurrentAdmin() admin: AdminPrincipal, @Param('id') id: string): Promise<AgentView> {
    return this.agents.revoke(admin, id);
  }
}

import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiBadRequestResponse, ApiConflictResponse, ApiCreatedResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminPrincipal } from '../common/admin-principal';
import { AdminAuth, CurrentAdmin } from '../../core/common/auth-decorators';
import { ErrorBody } from '../../core/common/error-body.dto';
import { CanaryListView, CanaryStartDto, CanaryView, ForceQueryDto, InvalidPolicyBody, PolicyTestsFailedBody } from './policies.dto';
import { PolicyCanariesService } from './policy-canaries.service';

/** Canary rollouts of policies (docs/policies.md "Canary rollouts"). */
@ApiTags('policies')
@AdminAuth()
@Controller('admin/canaries')
export class PolicyCanariesController {
  constructor(private readonly canaries: PolicyCanariesService) {}

  @Post()
  @ApiOperation({ summary: 'Start a canary rollout: a new version of one policy in force for a share of the agents, rolled back by itself when it denies more than the rest' })
  @ApiCreatedResponse({ type: CanaryView })
  @ApiBadRequestResponse({ description: '`invalid_request`: share outside 1-99, a bad window or margin, a shadow version; `invalid_policy`: the version does not load', type: InvalidPolicyBody })
  @ApiConflictResponse({ description: '`conflict`: a rollout already runs in the organization, or git owns the policy; `policy_tests_failed`: the new version fails stored tests (force=true starts it anyway)', type: PolicyTestsFailedBody })
  start(@CurrentAdmin() admin: AdminPrincipal, @Body() body: CanaryStartDto, @Query() query: ForceQueryDto): Promise<CanaryView> {
    return this.canaries.start(admin, body, query.force === 'true');
  }

  @Get()
  @ApiOperation({ summary: 'The organization’s canary rollouts, newest first, with both cohorts’ rates' })
  @ApiOkResponse({ type: CanaryListView })
  list(@CurrentAdmin() admin: AdminPrincipal): Promise<CanaryListView> {
    return this.canaries.list(admin);
  }

  @Get(':id')
  @ApiOperation({ summary: 'One canary rollout with both cohorts’ decisions, deny, approval and error rates' })
  @ApiOkResponse({ type: CanaryView })
  @ApiNotFoundResponse({ type: ErrorBody })
  get(@CurrentAdmin() admin: AdminPrincipal, @Param('id') id: string): Promise<CanaryView> {
    return this.canaries.get(admin, id);
  }

  @Post(':id/promote')
  @HttpCode(200)
  @ApiOperation({ summary: 'Put the rollout’s new version in force for every agent; makes a new policy version' })
  @ApiOkResponse({ type: CanaryView })
  @ApiNotFoundResponse({ type: ErrorBody })
  @ApiConflictResponse({ description: '`conflict`: the rollout already ended; `policy_tests_failed`: the version fails stored tests (force=true promotes it anyway)', type: PolicyTestsFailedBody })
  promote(@CurrentAdmin() admin: AdminPrincipal, @Param('id') id: string, @Query() query: ForceQueryDto): Promise<CanaryView> {
    return this.canaries.promote(admin, id, query.force === 'true');
  }

  @Post(':id/abort')
  @HttpCode(200)
  @ApiOperation({ summary: 'End the rollout: every agent decides on the version in force again; makes a new policy version' })
  @ApiOkResponse({ type: CanaryView })
  @ApiNotFoundResponse({ type: ErrorBody })
  @ApiConflictResponse({ description: 'The rollout already ended', type: ErrorBody })
  abort(@CurrentAdmin() admin: AdminPrincipal, @Param('id') id: string): Promise<CanaryView> {
    return this.canaries.abort(admin, id);
  }
}

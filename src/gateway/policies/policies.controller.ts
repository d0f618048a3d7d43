import { Controller, Delete, Get, HttpCode, Param, Post, Put, Query, Res } from '@nestjs/common';
import { ApiBadRequestResponse, ApiBody, ApiConflictResponse, ApiConsumes, ApiCreatedResponse, ApiForbiddenResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { AdminPrincipal } from '../common/admin-principal';
import { AdminAuth, CurrentAdmin } from '../../core/common/auth-decorators';
import { ErrorBody, PlanLimitErrorBody } from '../../core/common/error-body.dto';
import { ForceQueryDto, InvalidPolicyBody, PolicyTestsFailedBody, PolicyDetailView, PolicyListView, PolicyVersionListView, PolicyVersionsQueryDto, ValidationResultView } from './policies.dto';
import { PoliciesService } from './policies.service';
import { PolicySource } from './policy-source';

const POLICY_EXAMPLE = {
  name: 'block-sensitive-files',
  match: { action: 'read:*' },
  rules: [{ name: 'system-paths', condition: 'args.path starts_with "/etc"', action: 'deny', reason: 'Access to system files blocked' }],
};

@ApiTags('policies')
@AdminAuth()
@Controller('admin/policies')
export class PoliciesController {
  constructor(private readonly policies: PoliciesService) {}

  @Get()
  @ApiOperation({ summary: 'The organization’s policies, in evaluation order, with the current policy version' })
  @ApiOkResponse({ type: PolicyListView })
  list(@CurrentAdmin() admin: AdminPrincipal): Promise<PolicyListView> {
    return this.policies.list(admin);
  }

  @Get('versions')
  @ApiOperation({ summary: 'Policy change history, newest first' })
  @ApiOkResponse({ type: PolicyVersionListView })
  @ApiBadRequestResponse({ description: 'limit outside 1-1000', type: ErrorBody })
  versions(@CurrentAdmin() admin: AdminPrincipal, @Query() query: PolicyVersionsQueryDto): Promise<PolicyVersionListView> {
    return this.policies.history(admin, query.limit);
  }

  @Post('validate')
  @HttpCode(200)
  @ApiOperation({ summary: 'Dry-run validation of a policy or a policies file (YAML or JSON): every error with its line and column' })
  @ApiConsumes('application/json', 'application/yaml')
  @ApiBody({ schema: { type: 'object', example: POLICY_EXAMPLE } })
  @ApiOkResponse({ type: ValidationResultView, description: 'Valid or not: a policy error is reported in the body, not as a status' })
  @ApiBadRequestResponse({ description: 'invalid_json: a JSON body that does not parse', type: ErrorBody })
  validate(@PolicySource() source: string): ValidationResultView {
    return this.policies.validate(source);
  }

  @Get(':name')
  @ApiOperation({ summary: 'One policy, with its source' })
  @ApiOkResponse({ type: PolicyDetailView })
  @ApiNotFoundResponse({ type: ErrorBody })
  get(@CurrentAdmin() admin: AdminPrincipal, @Param('name') name: string): Promise<PolicyDetailView> {
    return this.policies.get(admin, name);
  }

  @Put(':name')
  @ApiOperation({ summary: 'Create (201) or replace (200) a policy; YAML or JSON body; makes a new policy version' })
  @ApiConsumes('application/json', 'application/yaml')
  @ApiBody({ schema: { type: 'object', example: POLICY_EXAMPLE } })
  @ApiCreatedResponse({ type: PolicyDetailView, description: 'Created' })
  @ApiOkResponse({ type: PolicyDetailView, description: 'Replaced' })
  @ApiBadRequestResponse({ description: 'invalid_policy: the first 100 errors with file, policy, rule, line and column, and errorCount', type: InvalidPolicyBody })
  @ApiForbiddenResponse({ description: 'plan_limit_exceeded: the plan’s policy limit is reached', type: PlanLimitErrorBody })
  @ApiConflictResponse({ description: 'policy_tests_failed: the change fails stored policy tests (named); force=true puts it in force anyway', type: PolicyTestsFailedBody })
  async put(
    @CurrentAdmin() admin: AdminPrincipal,
    @Param('name') name: string,
    @PolicySource() source: string,
    @Query() query: ForceQueryDto,
    @Res({ passthrough: true }) response: Response,
  ): Promise<PolicyDetailView> {
    const { created, policy } = await this.policies.put(admin, name, source, query.force === 'true');
    response.status(created ? 201 : 200);
    return policy;
  }

  @Post(':name/promote')
  @HttpCode(200)
  @ApiOperation({ summary: 'Put a shadow policy in force (its mode becomes enforce); makes a new policy version' })
  @ApiOkResponse({ type: PolicyDetailView })
  @ApiNotFoundResponse({ type: ErrorBody })
  @ApiConflictResponse({ description: '`conflict`: the policy is not a shadow policy; `policy_tests_failed`: in force it fails stored tests (force=true promotes it anyway)', type: PolicyTestsFailedBody })
  promote(@CurrentAdmin() admin: AdminPrincipal, @Param('name') name: string, @Query() query: ForceQueryDto): Promise<PolicyDetailView> {
    return this.policies.promote(admin, name, query.force === 'true');
  }

  @Delete(':name')
  @HttpCode(200)
  @ApiOperation({ summary: 'Delete a policy; makes a new policy version' })
  @ApiOkResponse({ schema: { type: 'object', properties: { version: { type: 'number' } } } })
  @ApiNotFoundResponse({ type: ErrorBody })
  @ApiConflictResponse({ description: 'policy_tests_failed: without it stored policy tests fail; force=true deletes it anyway', type: PolicyTestsFailedBody })
  remove(@CurrentAdmin() admin: AdminPrincipal, @Param('name') name: string, @Query() query: ForceQueryDto): Promise<{ version: number }> {
    return this.policies.remove(admin, name, query.force === 'true');
  }
}

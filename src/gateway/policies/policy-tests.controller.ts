import { Controller, Delete, Get, HttpCode, Param, Post, Put, Query, Res } from '@nestjs/common';
import { ApiBadRequestResponse, ApiConflictResponse, ApiConsumes, ApiCreatedResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { AdminPrincipal } from '../common/admin-principal';
import { AdminAuth, CurrentAdmin } from '../../core/common/auth-decorators';
import { ErrorBody } from '../../core/common/error-body.dto';
import { ForceQueryDto, InvalidPolicyBody, PolicyTestFileListView, PolicyTestFileView, PolicyTestRunView, PolicyTestsFailedBody } from './policies.dto';
import { PolicySource } from './policy-source';
import { PolicyTestsService } from './policy-tests.service';

@ApiTags('policies')
@AdminAuth()
@Controller('admin/policy-tests')
export class PolicyTestsController {
  constructor(private readonly tests: PolicyTestsService) {}

  @Get()
  @ApiOperation({ summary: 'The organization’s stored policy test files' })
  @ApiOkResponse({ type: PolicyTestFileListView })
  list(@CurrentAdmin() admin: AdminPrincipal): Promise<PolicyTestFileListView> {
    return this.tests.list(admin);
  }

  @Post('run')
  @HttpCode(200)
  @ApiOperation({ summary: 'Run every stored test file against the policies in force' })
  @ApiOkResponse({ type: PolicyTestRunView })
  run(@CurrentAdmin() admin: AdminPrincipal): Promise<PolicyTestRunView> {
    return this.tests.run(admin);
  }

  @Get(':name')
  @ApiOperation({ summary: 'One stored test file, with its source' })
  @ApiOkResponse({ type: PolicyTestFileView })
  @ApiNotFoundResponse({ type: ErrorBody })
  get(@CurrentAdmin() admin: AdminPrincipal, @Param('name') name: string): Promise<PolicyTestFileView> {
    return this.tests.get(admin, name);
  }

  @Put(':name')
  @ApiOperation({ summary: 'Store (201) or replace (200) a test file (YAML or JSON, without `policies`); every later policy change must pass it' })
  @ApiConsumes('application/yaml', 'application/json')
  @ApiCreatedResponse({ type: PolicyTestFileView, description: 'Stored' })
  @ApiOkResponse({ type: PolicyTestFileView, description: 'Replaced' })
  @ApiBadRequestResponse({ description: 'invalid_policy: the test file’s errors with line and column', type: InvalidPolicyBody })
  @ApiConflictResponse({ description: 'policy_tests_failed: the file fails against the policies in force; force=true stores it anyway', type: PolicyTestsFailedBody })
  async put(
    @CurrentAdmin() admin: AdminPrincipal,
    @Param('name') name: string,
    @PolicySource() source: string,
    @Query() query: ForceQueryDto,
    @Res({ passthrough: true }) response: Response,
  ): Promise<PolicyTestFileView> {
    const { created, file } = await this.tests.put(admin, name, source, query.force === 'true');
    response.status(created ? 201 : 200);
    return file;
  }

  @Delete(':name')
  @HttpCode(204)
  @ApiOperation({ summary: 'Delete a stored test file' })
  @ApiNotFoundResponse({ type: ErrorBody })
  remove(@CurrentAdmin() admin: AdminPrincipal, @Param('name') name: string): Promise<void> {
    return this.tests.remove(admin, name);
  }
}

import { Body, Controller, Delete, Get, HttpCode, Put } from '@nestjs/common';
import { ApiBadRequestResponse, ApiConflictResponse, ApiNoContentResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminAuth, CurrentAdmin } from '../../core/common/auth-decorators';
import { ErrorBody } from '../../core/common/error-body.dto';
import { AdminPrincipal } from '../common/admin-principal';
import { PolicyGitSourceDto, PolicyGitSourceView } from './policy-git-sources.dto';
import { PolicyGitSourcesService } from './policy-git-sources.service';

/** An organization's policies kept in step with a git branch (docs/policies.md "Policies from git"). */
@ApiTags('policies')
@AdminAuth()
@Controller('admin/policy-git')
export class PolicyGitSourcesController {
  constructor(private readonly sources: PolicyGitSourcesService) {}

  @Put()
  @ApiOperation({ summary: 'Keep the organization’s policies in step with a git branch: each good commit becomes a policy version; answers after the first fetch' })
  @ApiOkResponse({ type: PolicyGitSourceView })
  @ApiBadRequestResponse({ description: 'A URL, branch, path, poll interval or allowed-signers text that is not taken (named in the message)', type: ErrorBody })
  @ApiConflictResponse({ description: 'The organization follows POLICIES_GIT_URL, set by the deployment', type: ErrorBody })
  set(@CurrentAdmin() admin: AdminPrincipal, @Body() body: PolicyGitSourceDto): Promise<PolicyGitSourceView> {
    return this.sources.set(admin, body);
  }

  @Get()
  @ApiOperation({ summary: 'The organization’s git source: the repository, the commit in force, and why the latest was refused, if it was' })
  @ApiOkResponse({ type: PolicyGitSourceView })
  @ApiNotFoundResponse({ type: ErrorBody })
  get(@CurrentAdmin() admin: AdminPrincipal): Promise<PolicyGitSourceView> {
    return this.sources.get(admin);
  }

  @Delete()
  @HttpCode(204)
  @ApiOperation({ summary: 'Stop following git: the policies in force stay, and the API may change them again' })
  @ApiNoContentResponse({ description: 'Removed' })
  @ApiNotFoundResponse({ type: ErrorBody })
  remove(@CurrentAdmin() admin: AdminPrincipal): Promise<void> {
    return this.sources.remove(admin);
  }
}

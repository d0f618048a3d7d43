import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiConflictResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminPrincipal } from '../common/admin-principal';
import { AdapterAuth, AdminAuth, CurrentAdapter, CurrentAdmin } from '../../core/common/auth-decorators';
import { ErrorBody } from '../../core/common/error-body.dto';
import { ApprovalDecisionDto, ApprovalListView, ApprovalQueryDto, ApprovalStatusDto, ApprovalView } from './approvals.dto';
import { ApprovalsService } from './approvals.service';

@ApiTags('approvals')
@AdminAuth()
@Controller('admin/approvals')
export class ApprovalsController {
  constructor(private readonly approvals: ApprovalsService) {}

  @Get()
  @ApiOperation({ summary: 'The organization’s approvals, newest first, a page at a time (`cursor`: the previous page’s `nextCursor`); `status` (pending, approved, rejected, expired, used) and `agentId` filter' })
  @ApiOkResponse({ type: ApprovalListView })
  list(@CurrentAdmin() admin: AdminPrincipal, @Query() query: ApprovalQueryDto): Promise<ApprovalListView> {
    return this.approvals.list(admin, query);
  }

  @Post(':id/approve')
  @HttpCode(200)
  @ApiOperation({ summary: 'Approve a pending request: its agent’s retry of that very request goes through, once (recorded in the audit trail)' })
  @ApiOkResponse({ type: ApprovalView })
  @ApiNotFoundResponse({ description: 'No such approval in this organization', type: ErrorBody })
  @ApiConflictResponse({ description: 'The approval is no longer pending (decided, used or expired)', type: ErrorBody })
  approve(@CurrentAdmin() admin: AdminPrincipal, @Param('id') id: string, @Body() dto: ApprovalDecisionDto): Promise<ApprovalView> {
    return this.approvals.decide(admin, id, 'approved', dto.comment);
  }

  @Post(':id/reject')
  @HttpCode(200)
  @ApiOperation({ summary: 'Reject a pending request: a retry with its approval is denied (recorded in the audit trail)' })
  @ApiOkResponse({ type: ApprovalView })
  @ApiNotFoundResponse({ description: 'No such approval in this organization', type: ErrorBody })
  @ApiConflictResponse({ description: 'The approval is no longer pending (decided, used or expired)', type: ErrorBody })
  reject(@CurrentAdmin() admin: AdminPrincipal, @Param('id') id: string, @Body() dto: ApprovalDecisionDto): Promise<ApprovalView> {
    return this.approvals.decide(admin, id, 'rejected', dto.comment);
  }
}

/** An adapter (an SDK's `guard()`) waits for the approval its check opened (docs/approvals.md). */
@ApiTags('approvals')
@AdapterAuth()
@Controller('v1/approvals')
export class AdapterApprovalsController {
  constructor(private readonly approvals: ApprovalsService) {}

  @Get(':id')
  @ApiOperation({ summary: 'Where an approval stands (pending, approved, rejected, expired, used), for the adapter that waits for it' })
  @ApiOkResponse({ type: ApprovalStatusDto })
  @ApiNotFoundResponse({ description: 'No such approval in the adapter’s organization', type: ErrorBody })
  async status(@CurrentAdapter() adapter: { orgId: string }, @Param('id') id: string): Promise<ApprovalStatusDto> {
    const { status, expiresAt } = await this.approvals.get(adapter.orgId, id);
    return { id, status, expiresAt };
  }
}

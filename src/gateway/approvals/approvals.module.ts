import { Module } from '@nestjs/common';
import { AuditModule } from '../audit/audit.module';
import { ApprovalLinks } from './approval-links';
import { ApprovalLinksController } from './approval-links.controller';
import { AdapterApprovalsController, ApprovalsController } from './approvals.controller';
import { EdgeApprovalsController } from './edge-approvals.controller';
import { ApprovalsService } from './approvals.service';
import { StoredApprovals } from './stored-approvals';

/**
 * Human approvals on the gateway (docs/approvals.md): the approvals a `require_approval` rule
 * opens (StoredApprovals, the decision core's ApprovalDesk), the admin API, the adapters' status
 * route, and the signed links of the notifications.
 */
@Module({
  imports: [AuditModule],
  controllers: [ApprovalsController, AdapterApprovalsController, ApprovalLinksController, EdgeApprovalsController],
  providers: [StoredApprovals, ApprovalsService, ApprovalLinks],
  exports: [StoredApprovals, ApprovalsService, ApprovalLinks],
})
export class ApprovalsModule {}

import { Option, SubCommand } from 'nest-commander';
import { APPROVAL_PAGE_MAX, APPROVAL_STATUSES, ApprovalStatus } from '../gateway/approvals/approvals.dto';
import { ApprovalsService } from '../gateway/approvals/approvals.service';
import { BOOTSTRAP_ORG_ID } from '../gateway/organizations/organizations.service';
import { CliCommand, CommandGroup } from './cli-command';
import { CliError, fail, printFields } from './cli-output';

/** The CLI decides as `cli` (the audit trail's actor of its changes). */
const CLI_ACTOR = 'cli';

interface ListOptions {
  org?: string;
  status?: ApprovalStatus;
}

@SubCommand({ name: 'list', description: 'List an organization’s approvals, newest first' })
export class ApprovalsListCommand extends CliCommand {
  constructor(private readonly approvals: ApprovalsService) {
    super();
  }

  async run(_args: string[], options: ListOptions): Promise<void> {
    try {
      const admin = { orgId: options.org ?? BOOTSTRAP_ORG_ID, tokenId: CLI_ACTOR };
      let cursor: string | undefined;
      do {
        const page = await this.approvals.list(admin, { status: options.status, limit: APPROVAL_PAGE_MAX, cursor });
        for (const approval of page.approvals) {
          process.stdout.write(`${approval.id}  ${approval.status.padEnd(8)}  ${approval.agentName}  ${approval.action}  ${approval.policy}: ${approval.reason}  expires ${approval.expiresAt}\n`);
        }
        cursor = page.nextCursor ?? undefined;
      } while (cursor !== undefined);
    } catch (error) {
      fail(error);
    }
  }

  @Option({ flags: '--org <orgId>', description: `Organization (default ${BOOTSTRAP_ORG_ID})` })
  parseOrg(value: string): string {
    return value;
  }

  @Option({ flags: '--status <status>', description: `Only approvals of this status (${APPROVAL_STATUSES.join(', ')})` })
  parseStatus(value: string): ApprovalStatus {
    if (!(APPROVAL_STATUSES as readonly string[]).includes(value)) throw new CliError(`--status ${value}: expected one of ${APPROVAL_STATUSES.join(', ')}`);
    return value as ApprovalStatus;
  }
}

/** Approve or reject: the approval's organization is read from its id. */
abstract class ApprovalsDecideCommand extends CliCommand {
  protected abstract readonly verdict: 'approved' | 'rejected';

  // Subclasses declare the constructor: only a decorated class gets the parameter types Nest injects by.
  constructor(private readonly approvals: ApprovalsService) {
    super();
  }

  async run([approvalId]: string[], options: { comment?: string }): Promise<void> {
    try {
      const orgId = await this.approvals.orgOf(approvalId);
      if (orgId === null) throw new CliError(`approval ${approvalId} not found`);
      const decided = await this.approvals.decide({ orgId, tokenId: CLI_ACTOR }, approvalId, this.verdict, options.comment);
      printFields({ id: decided.id, status: decided.status, action: decided.action, agent: decided.agentName, decidedAt: decided.decidedAt });
    } catch (error) {
      fail(error);
    }
  }

  @Option({ flags: '--comment <text>', description: 'Why (kept with the decision in the audit trail)' })
  parseComment(value: string): string {
    return value.slice(0, 1000);
  }
}

@SubCommand({ name: 'approve', arguments: '<approvalId>', description: 'Approve a pending request: its agent’s retry goes through, once' })
export class ApprovalsApproveCommand extends ApprovalsDecideCommand {
  protected readonly verdict = 'approved';

  constructor(approvals: ApprovalsService) {
    super(approvals);
  }
}

@SubCommand({ name: 'reject', arguments: '<approvalId>', description: 'Reject a pending request' })
export class ApprovalsRejectCommand extends ApprovalsDecideCommand {
  protected readonly verdict = 'rejected';

  constructor(approvals: ApprovalsService) {
    super(approvals);
  }
}

@SubCommand({ name: 'approvals', description: 'Human approvals of requests a require_approval rule holds', subCommands: [ApprovalsListCommand, ApprovalsApproveCommand, ApprovalsRejectCommand] })
export class ApprovalsCommand extends CommandGroup {}

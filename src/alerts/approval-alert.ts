import type { DecisionEvent } from '../decisions/decision-events';
import { Alert, newAlertId } from './alert';

/** The approve and reject links of an approval, signed (src/approvals/approval-links.ts). */
export interface ApprovalLinkPair {
  approve: string;
  reject: string;
}

/** The approval a decision opened (its entry's `details.approvalId`, answered 202), else undefined. */
export function openedApproval(event: DecisionEvent): string | undefined {
  if (event.entry.status !== 202) return undefined;
  const approvalId = (event.entry.details as { approvalId?: unknown } | null)?.approvalId;
  return typeof approvalId === 'string' ? approvalId : undefined;
}

/**
 * The notification of a request waiting for a person (docs/approvals.md), with the links that
 * approve or reject it: always raised when a provider is configured, whatever ALERT_ON says (the
 * policy asked for a person).
 */
export function approvalAlert(event: DecisionEvent, approvalId: string, links: ApprovalLinkPair): Alert {
  const { entry, decision } = event;
  const approvers = decision.approval?.approvers.length ? ` Approvers: ${decision.approval.approvers.join(', ')}.` : '';
  return {
    id: newAlertId(),
    timestamp: new Date(entry.ts).toISOString(),
    severity: 'warning',
    trigger: 'approval',
    title: `Approval needed: ${entry.action} by ${entry.agentName ?? entry.agentId ?? 'an agent'}`,
    message:
      `Agent ${entry.agentName ?? entry.agentId} (${entry.trustTier ?? 'unknown tier'}) waits for a person to approve ${entry.action}: ${decision.reason} (policy ${decision.policy}, approval ${approvalId}).${approvers} ` +
      `Approve: ${links.approve} Reject: ${links.reject}`,
    entry: {
      traceId: entry.traceId ?? '',
      agentId: entry.agentId ?? '',
      agentName: entry.agentName ?? '',
      trustTier: entry.trustTier ?? '',
      action: entry.action,
      method: entry.method ?? '',
      path: entry.path ?? '',
      decision: 'pending',
      policyName: decision.policy,
      reason: decision.reason,
    },
  };
}

import type { DecisionEvent } from '../../core/decision/decision-events';
import { Alert, newAlertId, singleLine } from './alert';

/** The approve and reject links of an approval, signed (src/gateway/approvals/approval-links.ts). */
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

/** The longest agent-supplied text (an action, a path) a notification quotes; the rest is cut, marked with `…`. */
export const QUOTED_MAX = 200;

/**
 * The notification of a request waiting for a person (docs/approvals.md), with the links that
 * approve or reject it: always raised when a provider is configured, whatever ALERT_ON says (the
 * policy asked for a person). The gateway's own links come first, and what the agent chose (its
 * action, method and path) is quoted as code, on one line and cut to QUOTED_MAX: a link or an
 * instruction in an action must not read as the gateway's (docs/security.md).
 */
export function approvalAlert(event: DecisionEvent, approvalId: string, links: ApprovalLinkPair): Alert {
  const { entry, decision } = event;
  const approvers = decision.approval?.approvers.length ? ` Approvers: ${decision.approval.approvers.join(', ')}.` : '';
  const agent = quoted(entry.agentName ?? entry.agentId ?? 'an agent');
  const request = entry.method ? `${quoted(`${entry.method} ${entry.path ?? ''}`)} (action ${quoted(entry.action)})` : quoted(entry.action);
  return {
    id: newAlertId(),
    timestamp: new Date(entry.ts).toISOString(),
    severity: 'warning',
    trigger: 'approval',
    orgId: entry.orgId,
    title: `Approval needed: ${entry.method ? quoted(`${entry.method} ${entry.path ?? ''}`) : quoted(entry.action)} by ${agent}`,
    message:
      `Approve: ${links.approve} Reject: ${links.reject} ` +
      `Agent ${agent} (${entry.trustTier ?? 'unknown tier'}) waits for a person to approve ${request}: ${decision.reason} (policy ${decision.policy}, approval ${approvalId}).${approvers}`,
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

/** Text the agent chose, as a code span: one line, no backtick of its own to close the span early, at most QUOTED_MAX characters. */
export function quoted(text: string): string {
  const line = singleLine(text).replace(/`/g, "'");
  const cut = line.length <= QUOTED_MAX ? line : `${line.slice(0, QUOTED_MAX - 1).replace(/[\ud800-\udbff]$/, '')}…`;
  return `\`${cut}\``;
}

import type { DecisionEvent } from '../decisions/decision-events';
import { canonicalTier } from '../policy-engine/tiers';
import type { FiredAlert } from '../policy-engine/types';
import type { AlertTriggerName } from '../config/app-config';
import { Alert, AlertEntry, AlertSeverity, AlertTrigger, newAlertId } from './alert';

/** The ALERT_ON triggers in force, `all` expanded. */
export type ActiveTriggers = ReadonlySet<Exclude<AlertTriggerName, 'all'>>;

/** ALERT_ON as a set, `all` expanded. */
export function activeTriggers(on: readonly AlertTriggerName[]): ActiveTriggers {
  return new Set(on.includes('all') ? (['deny', 'error', 'rate_limit'] as const) : on.filter((name) => name !== 'all'));
}

// A path or action segment named `admin`: `/admin/users`, `/api/admin`, `delete:admin/keys`, `admin:reset`.
const ADMIN_SEGMENT = /(^|[/:.])admin($|[/:.?])/i;

/**
 * The alerts one decision raises (null when none, the common case, decided without allocating):
 * - `error`: the caller got a 5xx (the gateway's 502/504, or an upstream's 5xx passed through);
 * - `rate_limit`: a denial because a rate limit tripped; only that, not also `deny`, since
 *   SPEC.md lists them as separate triggers and one event should raise one alert;
 * - `deny`: any other denial, including one MODE=audit let through (the message says so);
 * - `alert_rule`: each `alert` rule that fired, whatever ALERT_ON says: the policy asked for it.
 */
export function alertsOf(event: DecisionEvent, triggers: ActiveTriggers, nowMs: number): Alert[] | null {
  const { entry, decision } = event;
  const failed = entry.status !== null && entry.status >= 500;
  if (entry.decision === 'allow' && !failed && decision.alerts === undefined) return null;
  const alerts: Alert[] = [];
  const timestamp = new Date(nowMs).toISOString();
  if (failed && triggers.has('error')) alerts.push(errorAlert(event, timestamp));
  if (entry.decision === 'deny') {
    if (entry.rateLimited) {
      if (triggers.has('rate_limit')) alerts.push(rateLimitAlert(event, timestamp));
    } else if (triggers.has('deny')) alerts.push(denyAlert(event, timestamp));
  }
  for (const fired of decision.alerts ?? []) alerts.push(ruleAlert(event, fired, timestamp));
  return alerts.length > 0 ? alerts : null;
}

/** CONTRACT.md: critical for denials of `privileged` agents or of actions on an `admin` path, else warning. */
export function denialSeverity(entry: DecisionEvent['entry']): AlertSeverity {
  if (entry.trustTier !== null && canonicalTier(entry.trustTier) === 'privileged') return 'critical';
  return ADMIN_SEGMENT.test(entry.action) || (entry.path !== null && ADMIN_SEGMENT.test(entry.path)) ? 'critical' : 'warning';
}

function denyAlert(event: DecisionEvent, timestamp: string): Alert {
  const { entry } = event;
  const enforced = entry.enforced ? '' : ' (not enforced: MODE=audit let it through)';
  return alert('deny', denialSeverity(entry), timestamp, event, `Request denied by policy ${entry.policyName ?? 'default'}`, `${who(event)} was denied ${what(event)}: ${entry.reason ?? ''}${enforced}`);
}

function rateLimitAlert(event: DecisionEvent, timestamp: string): Alert {
  const limit = event.decision.rateLimit ? ` (${event.decision.rateLimit.limit})` : '';
  return alert('rate_limit', 'warning', timestamp, event, `Rate limit exceeded by agent ${event.entry.agentName ?? event.entry.agentId ?? 'unknown'}`, `${who(event)} exceeded a rate limit${limit} on ${what(event)}: ${event.entry.reason ?? ''}`);
}

function errorAlert(event: DecisionEvent, timestamp: string): Alert {
  const { entry } = event;
  const upstream = entry.upstreamStatus === null ? 'the gateway could not get an answer from the upstream' : `the upstream answered ${entry.upstreamStatus}`;
  return alert('error', 'critical', timestamp, event, `Request failed with status ${entry.status}`, `${who(event)} asked ${what(event)} and got ${entry.status}: ${upstream}`);
}

function ruleAlert(event: DecisionEvent, fired: FiredAlert, timestamp: string): Alert {
  const outcome = event.entry.decision === 'allow' ? 'allowed' : 'denied';
  return alert('alert_rule', 'warning', timestamp, event, `Alert rule ${fired.rule} of policy ${fired.policy}`, `${fired.reason}: ${who(event)} was ${outcome} ${what(event)}`, {
    policyName: fired.policy,
    reason: fired.reason,
  });
}

function alert(trigger: AlertTrigger, severity: AlertSeverity, timestamp: string, event: DecisionEvent, title: string, message: string, override?: Partial<AlertEntry>): Alert {
  return { id: newAlertId(), timestamp, severity, trigger, title, message, entry: { ...alertEntry(event), ...override } };
}

/** SPEC.md's audit-entry fields of the decision's entry. */
function alertEntry({ entry }: DecisionEvent): AlertEntry {
  return {
    traceId: entry.traceId ?? '',
    agentId: entry.agentId ?? '',
    agentName: entry.agentName ?? '',
    trustTier: entry.trustTier ?? '',
    action: entry.action,
    method: entry.method ?? '',
    path: entry.path ?? '',
    decision: entry.decision,
    policyName: entry.policyName ?? '',
    reason: entry.reason ?? '',
  };
}

function who({ entry }: DecisionEvent): string {
  return `Agent ${entry.agentName ?? entry.agentId ?? 'unknown'} (${entry.trustTier ?? 'unknown tier'})`;
}

function what({ entry }: DecisionEvent): string {
  return entry.method !== null && entry.path !== null ? `${entry.action} (${entry.method} ${entry.path})` : entry.action;
}

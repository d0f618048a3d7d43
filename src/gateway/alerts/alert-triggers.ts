import type { AuditRecord } from '../../core/audit-record/audit-record';
import type { AlertTriggerName } from '../../core/config/app-config';
import type { DecisionEvent, QuotaRefusal } from '../../core/decision/decision-events';
import type { RequestFailure } from '../../core/decision/request-failures';
import { canonicalTier } from '../../core/policy-engine/tiers';
import type { Decision, FiredAlert } from '../../core/policy-engine/types';
import { Alert, AlertSeverity, AlertTrigger, newAlertId } from './alert';

/** The ALERT_ON triggers in force, `all` expanded. */
export type ActiveTriggers = ReadonlySet<Exclude<AlertTriggerName, 'all'>>;

/** ALERT_ON as a set, `all` expanded. */
export function activeTriggers(on: readonly AlertTriggerName[]): ActiveTriggers {
  return new Set(on.includes('all') ? (['deny', 'error', 'rate_limit'] as const) : on.filter((name) => name !== 'all'));
}

/**
 * A raised alert waiting for its batch: the facts of its decision as a flat run of
 * RAISED_FIELDS values in a batch array, in the order `readRaised` reads them. The alert itself
 * (id, title, message) is built when the batch is delivered, after the request was answered.
 */
interface Raised extends Pick<AuditRecord, 'ts' | 'traceId' | 'agentId' | 'agentName' | 'trustTier' | 'action' | 'method' | 'path' | 'decision' | 'enforced' | 'status' | 'upstreamStatus'> {
  /**
   * `failure`: an `error` alert of a request failed before any decision (raiseFailure);
   * `quota`: a `rate_limit` alert of an organization out of monthly checks (raiseQuotaRefusal).
   */
  trigger: AlertTrigger | 'failure' | 'quota';
  /** The entry's policy, or the alert rule's. */
  policyName: string | null;
  /** The entry's reason, or the alert rule's. */
  reason: string | null;
  /** The tripped rate limit, e.g. `10/1m per_agent`. */
  limit: string | null;
  /** The alert rule's name. */
  rule: string | null;
  /** The agent's organization; null for a failure before any decision. */
  orgId: string | null;
  /** The decision's resource (a PDP question's `resource`), when it names one. */
  resource: string | null;
}

/** The status recorded when the caller went away before its answer was complete (nginx's). */
const CLIENT_CLOSED_REQUEST = 499;

/** Values per raised alert in a batch. */
export const RAISED_FIELDS = 19;

/**
 * Appends to `batch` the alerts one decision raises and returns how many (0, the common case,
 * decided without allocating). It runs on the request thread, so it only picks the triggers:
 * - `error`: the caller got a 5xx (the gateway's 502/504, or an upstream's 5xx passed through),
 *   or the upstream answered a 5xx the caller went away before receiving (499);
 * - `rate_limit`: a denial because a rate limit tripped; only that, not also `deny`, since
 *   they are separate triggers (docs/alerts.md) and one event should raise one alert;
 * - `deny`: any other denial, including one MODE=audit let through (the message says so);
 * - `alert_rule`: each `alert` rule that fired, whatever ALERT_ON says: the policy asked for it.
 */
export function raiseAlerts(event: DecisionEvent, triggers: ActiveTriggers, batch: unknown[]): number {
  const { entry, decision } = event;
  const failed = (entry.status !== null && entry.status >= 500) || (entry.upstreamStatus !== null && entry.upstreamStatus >= 500);
  if (entry.decision === 'allow' && !failed && decision.alerts === undefined) return 0;
  let raised = 0;
  if (failed && triggers.has('error')) raised += raise(batch, 'error', entry, decision, null);
  // A request held for a person's approval (202) is not a denial: it has its own notification (approval-alert.ts).
  if (entry.decision === 'deny' && entry.status !== 202) {
    if (entry.rateLimited) {
      if (triggers.has('rate_limit')) raised += raise(batch, 'rate_limit', entry, decision, null);
    } else if (triggers.has('deny')) raised += raise(batch, 'deny', entry, decision, null);
  }
  if (decision.alerts !== undefined) for (const fired of decision.alerts) raised += raise(batch, 'alert_rule', entry, decision, fired);
  return raised;
}

function raise(batch: unknown[], trigger: AlertTrigger, entry: AuditRecord, decision: Decision, fired: FiredAlert | null): number {
  batch.push(
    trigger,
    entry.ts,
    entry.traceId,
    entry.agentId,
    entry.agentName,
    entry.trustTier,
    entry.action,
    entry.method,
    entry.path,
    entry.decision,
    entry.enforced,
    fired === null ? entry.policyName : fired.policy,
    fired === null ? entry.reason : fired.reason,
    entry.status,
    entry.upstreamStatus,
    decision.rateLimit === undefined ? null : decision.rateLimit.limit,
    fired === null ? null : fired.rule,
    entry.orgId,
    resourceOf(entry.input),
  );
  return 1;
}

/** The resource of an entry's input (a DecisionInput, or an ingested entry's stored copy of one). */
function resourceOf(input: unknown): string | null {
  const resource = typeof input === 'object' && input !== null ? (input as { resource?: unknown }).resource : undefined;
  return typeof resource === 'string' && resource !== '' ? resource : null;
}

/**
 * Appends the `error` alert of a request the gateway failed itself before deciding it (an
 * unreachable database, a fault of ours): no agent or policy is known, and the request was not
 * served, so its entry says `deny`.
 */
export function raiseFailure(failure: RequestFailure, batch: unknown[]): void {
  batch.push('failure', Date.now(), failure.traceId, null, null, null, '', failure.method, failure.path, 'deny', true, null, failure.message, failure.status, null, null, null, null, null);
}

/**
 * Appends the `rate_limit` alert of a request refused because its organization has used its
 * monthly policy checks (a 429, as a tripped rate limit is). It is not a decision: no policy.
 */
export function raiseQuotaRefusal(refusal: QuotaRefusal, batch: unknown[]): void {
  const { ts, traceId, agentId, agentName, trustTier, action, method, path, reason, orgId } = refusal;
  batch.push('quota', ts, traceId, agentId, agentName, trustTier, action, method, path, 'deny', true, null, reason, 429, null, null, null, orgId, null);
}

/** The alerts of a batch built by raiseAlerts: ids, severities, titles and messages. */
export function alertsOfBatch(batch: readonly unknown[]): Alert[] {
  const alerts: Alert[] = [];
  for (let at = 0; at + RAISED_FIELDS <= batch.length; at += RAISED_FIELDS) alerts.push(alertOf(readRaised(batch, at)));
  return alerts;
}

/** The alerts one decision raises, built at once (tests, and callers off the request path). */
export function alertsOf(event: DecisionEvent, triggers: ActiveTriggers): Alert[] {
  const batch: unknown[] = [];
  raiseAlerts(event, triggers, batch);
  return alertsOfBatch(batch);
}

function readRaised(batch: readonly unknown[], at: number): Raised {
  const values = batch as readonly never[];
  return {
    trigger: values[at],
    ts: values[at + 1],
    traceId: values[at + 2],
    agentId: values[at + 3],
    agentName: values[at + 4],
    trustTier: values[at + 5],
    action: values[at + 6],
    method: values[at + 7],
    path: values[at + 8],
    decision: values[at + 9],
    enforced: values[at + 10],
    policyName: values[at + 11],
    reason: values[at + 12],
    status: values[at + 13],
    upstreamStatus: values[at + 14],
    limit: values[at + 15],
    rule: values[at + 16],
    orgId: values[at + 17],
    resource: values[at + 18],
  };
}

/** The last timestamp rendered: the alerts of a burst share their millisecond often enough to skip the Date. */
let lastIso = { ms: Number.NaN, text: '' };

function isoTimestamp(ms: number): string {
  if (ms !== lastIso.ms) lastIso = { ms, text: new Date(ms).toISOString() };
  return lastIso.text;
}

// A path or action segment named `admin`: `/admin/users`, `/api/admin`, `delete:admin/keys`, `admin:reset`.
const ADMIN_SEGMENT = /(^|[/:.])admin($|[/:.?])/i;

/**
 * docs/alerts.md "Triggers and severity": critical for denials of `privileged` agents or of actions on an `admin` path, else
 * warning. The path is the request's, or a PDP question's resource: the same file asked about
 * through the PDP or fetched through the proxy is as critical either way.
 */
function denialSeverity(raised: Raised): AlertSeverity {
  if (raised.trustTier !== null && canonicalTier(raised.trustTier) === 'privileged') return 'critical';
  const onAdmin = ADMIN_SEGMENT.test(raised.action) || (raised.path !== null && ADMIN_SEGMENT.test(raised.path)) || (raised.resource !== null && ADMIN_SEGMENT.test(raised.resource));
  return onAdmin ? 'critical' : 'warning';
}

function alertOf(raised: Raised): Alert {
  const [severity, title, message] = describe(raised);
  return {
    id: newAlertId(),
    timestamp: isoTimestamp(raised.ts),
    severity,
    trigger: raised.trigger === 'failure' ? 'error' : raised.trigger === 'quota' ? 'rate_limit' : raised.trigger,
    title,
    message,
    orgId: raised.orgId,
    entry: {
      traceId: raised.traceId ?? '',
      agentId: raised.agentId ?? '',
      agentName: raised.agentName ?? '',
      trustTier: raised.trustTier ?? '',
      action: raised.action,
      method: raised.method ?? '',
      path: raised.path ?? '',
      decision: raised.decision,
      policyName: raised.policyName ?? '',
      reason: raised.reason ?? '',
    },
  };
}

/** Severity, title and message of a raised alert. */
function describe(raised: Raised): [AlertSeverity, string, string] {
  const reason = raised.reason ?? '';
  switch (raised.trigger) {
    case 'deny':
      return [denialSeverity(raised), `Request denied by policy ${raised.policyName ?? 'default'}`, `${who(raised)} was denied ${what(raised)}: ${reason}${notEnforced(raised)}`];
    case 'rate_limit': {
      const limit = raised.limit === null ? '' : ` (${raised.limit})`;
      return [
        'warning',
        `Rate limit exceeded by agent ${raised.agentName ?? raised.agentId ?? 'unknown'}`,
        `${who(raised)} exceeded a rate limit${limit} on ${what(raised)}: ${reason}${notEnforced(raised)}`,
      ];
    }
    case 'quota':
      return [
        'warning',
        `Monthly policy checks used up by organization ${raised.orgId}`,
        `Organization ${raised.orgId} has used its monthly policy checks: its agents' requests are refused with 429 quota_exceeded until the quota resets or the plan changes. ` +
          `${who(raised)} was refused ${what(raised)}. Each gateway instance says this at most once an hour per organization.`,
      ];
    case 'failure': {
      const request = raised.method === '' ? raised.path : `${raised.method} ${raised.path}`;
      return ['critical', `Request failed with status ${raised.status}`, `The gateway failed ${request} with ${raised.status} before deciding it: ${reason}`];
    }
    case 'error': {
      const upstream = raised.upstreamStatus !== null ? `the upstream answered ${raised.upstreamStatus}` : upstreamFailure(raised.status);
      if (raised.status === CLIENT_CLOSED_REQUEST) {
        return ['critical', `Upstream failed with status ${raised.upstreamStatus}`, `${who(raised)} asked ${what(raised)}: ${upstream}, and the caller closed the connection before the answer was complete (499)`];
      }
      return ['critical', `Request failed with status ${raised.status}`, `${who(raised)} asked ${what(raised)} and got ${raised.status}: ${upstream}`];
    }
    default: {
      const outcome = raised.decision === 'allow' ? 'allowed' : 'denied';
      return ['warning', `Alert rule ${raised.rule} of policy ${raised.policyName}`, `${reason}: ${who(raised)} was ${outcome} ${what(raised)}${notEnforced(raised)}`];
    }
  }
}

/** Why no upstream answer came, said of whichever forwarded the request (the gateway, or a sidecar whose entry was ingested). */
function upstreamFailure(status: number | null): string {
  if (status === 504) return 'the upstream did not answer in time';
  if (status === 502) return 'the upstream could not be reached';
  return 'no answer came from the upstream';
}

/** Said of a denial MODE=audit let through, whatever the trigger: the reader must not believe the request was stopped. */
function notEnforced(raised: Raised): string {
  return raised.decision === 'deny' && !raised.enforced ? ' (not enforced: MODE=audit let it through)' : '';
}

function who(raised: Raised): string {
  return `Agent ${raised.agentName ?? raised.agentId ?? 'unknown'} (${raised.trustTier ?? 'unknown tier'})`;
}

function what(raised: Raised): string {
  return raised.method !== null && raised.path !== null ? `${raised.action} (${raised.method} ${raised.path})` : raised.action;
}

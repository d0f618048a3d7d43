import type { Decision, FiredAlert } from '../policy-engine/types';

/** At most this many fired alert rules are carried by one entry (a policy set rarely has more than a few). */
export const MAX_FIRED_ALERTS = 32;
const MAX_ALERT_TEXT = 2048;

/**
 * A decision entry's `details`: the `alert` rules that fired, or null. They are kept in the
 * audit trail (which alert a decision raised) and carried by the sidecar's entries to the
 * gateway, which raises the alerts of edge decisions as it raises its own.
 */
export function decisionDetails(decision: Decision): { alerts: readonly FiredAlert[] } | null {
  return decision.alerts !== undefined && decision.alerts.length > 0 ? { alerts: decision.alerts } : null;
}

/** The fired alert rules an ingested decision entry's `details` names; [] when it names none or is malformed. */
export function firedAlertsIn(details: unknown): FiredAlert[] {
  const alerts = typeof details === 'object' && details !== null ? (details as { alerts?: unknown }).alerts : undefined;
  if (!Array.isArray(alerts)) return [];
  return alerts.slice(0, MAX_FIRED_ALERTS).filter(isFiredAlert);
}

function isFiredAlert(value: unknown): value is FiredAlert {
  if (typeof value !== 'object' || value === null) return false;
  const { policy, rule, reason } = value as Record<string, unknown>;
  return isText(policy) && isText(rule) && isText(reason);
}

function isText(value: unknown): value is string {
  return typeof value === 'string' && value.length <= MAX_ALERT_TEXT;
}

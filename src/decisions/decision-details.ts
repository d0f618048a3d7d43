import type { Decision, FiredAlert } from '../policy-engine/types';

/** At most this many fired alert rules are carried by one entry (a policy set rarely has more than a few). */
export const MAX_FIRED_ALERTS = 32;
/** Longest text of a fired alert taken from an ingested entry, as the audit trail keeps texts (audit-sanitizer.ts). */
export const MAX_ALERT_TEXT = 2048;
const TRUNCATED = '…[truncated]';

/**
 * A decision entry's `details`: the `alert` rules that fired, or null. They are kept in the
 * audit trail (which alert a decision raised) and carried by the sidecar's entries to the
 * gateway, which raises the alerts of edge decisions as it raises its own.
 */
export function decisionDetails(decision: Decision): { alerts: readonly FiredAlert[] } | null {
  return decision.alerts !== undefined && decision.alerts.length > 0 ? { alerts: decision.alerts } : null;
}

/**
 * The fired alert rules an ingested decision entry's `details` names; [] when it names none or is
 * malformed. A text over MAX_ALERT_TEXT is cut, not refused: the sidecar's audit buffer already
 * cuts long texts (a rule's reason may be any length), and refusing the cut one lost its alert.
 */
export function firedAlertsIn(details: unknown): FiredAlert[] {
  const alerts = typeof details === 'object' && details !== null ? (details as { alerts?: unknown }).alerts : undefined;
  if (!Array.isArray(alerts)) return [];
  return alerts.slice(0, MAX_FIRED_ALERTS).filter(isFiredAlert).map(({ policy, rule, reason }) => ({ policy: bounded(policy), rule: bounded(rule), reason: bounded(reason) }));
}

function isFiredAlert(value: unknown): value is FiredAlert {
  if (typeof value !== 'object' || value === null) return false;
  const { policy, rule, reason } = value as Record<string, unknown>;
  return typeof policy === 'string' && typeof rule === 'string' && typeof reason === 'string';
}

/** The text, or its first MAX_ALERT_TEXT characters marked as cut (the edge's own cut, cut again, reads the same). */
function bounded(text: string): string {
  return text.length <= MAX_ALERT_TEXT ? text : `${text.slice(0, MAX_ALERT_TEXT).toWellFormed()}${TRUNCATED}`;
}

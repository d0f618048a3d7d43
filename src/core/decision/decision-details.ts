import type { Decision, FiredAlert, RateLimitTrip, ShadowDecision } from '../policy-engine/types';

/** At most this many fired alert rules are carried by one entry (a policy set rarely has more than a few). */
export const MAX_FIRED_ALERTS = 32;
/** Longest text of a fired alert taken from an ingested entry, as the audit trail keeps texts (audit-sanitizer.ts). */
export const MAX_ALERT_TEXT = 2048;
const TRUNCATED = '…[truncated]';

/**
 * A decision entry's `details`: the `alert` rules that fired, the rate limit that tripped and
 * the derived action beside a declared one, each only when there is one. They are kept in the audit trail (which alert a decision raised,
 * which limit refused it) and carried by the sidecar's entries to the gateway, which raises the
 * alerts of edge decisions as it raises its own.
 */
export interface DecisionDetails {
  alerts?: readonly FiredAlert[];
  rateLimit?: RateLimitTrip;
  /** The action derived from the request when the caller declared another (the entry's `action`); both were decided. */
  derivedAction?: string;
  /** The approval a `require_approval` rule opened for the request, or the one it presented. */
  approvalId?: string;
  /** The budget that refused the call (`budget_exceeded`). */
  budget?: RateLimitTrip;
  /** The session the decision read (its id, `` for the agent's own scope), the labels it read and those it added. */
  session?: SessionDetails;
  /** What the call reserved of its budgets, before its outcome settles it. */
  reserved?: number;
  /** What each shadow policy that applied would have decided (docs/policies.md "Shadow policies"). */
  shadow?: readonly ShadowDecision[];
  /** The upstream credential injected into the forwarded request (docs/security.md "Upstream credentials"). */
  credentialId?: string;
}

/** What an audit entry says of the session a decision read (docs/policies.md "Sessions"). */
export interface SessionDetails {
  id: string;
  labels: readonly string[];
  agentLabels: readonly string[];
  labelsAdded?: readonly string[];
}

/** What the decision memory adds to a decision entry's details. */
export type MemoryDetails = Pick<DecisionDetails, 'session' | 'reserved'>;

/** A decision's `details`, or null when it has none. */
export function decisionDetails(decision: Decision, derivedAction?: string, approvalId?: string, shadow?: readonly ShadowDecision[], memory?: MemoryDetails, credentialId?: string): DecisionDetails | null {
  const details = detailsOf(decision.alerts ?? [], decision.rateLimit, derivedAction, approvalId, shadow ?? [], credentialId);
  if (decision.budget === undefined && memory === undefined) return details;
  return { ...details, ...(decision.budget === undefined ? {} : { budget: decision.budget }), ...memory };
}

/** An ingested decision entry's `details`, keeping only what is well formed (an edge sidecar's entry is checked, not trusted); null when nothing is. */
export function ingestedDetails(details: unknown): DecisionDetails | null {
  const derived = typeof details === 'object' && details !== null ? (details as { derivedAction?: unknown }).derivedAction : undefined;
  const approvalId = typeof details === 'object' && details !== null ? (details as { approvalId?: unknown }).approvalId : undefined;
  const credentialId = typeof details === 'object' && details !== null ? (details as { credentialId?: unknown }).credentialId : undefined;
  return detailsOf(
    firedAlertsIn(details),
    rateLimitIn(details),
    typeof derived === 'string' ? bounded(derived) : undefined,
    typeof approvalId === 'string' ? bounded(approvalId) : undefined,
    shadowIn(details),
    typeof credentialId === 'string' ? bounded(credentialId) : undefined,
  );
}

/** Details naming only what there is; null when there is nothing. */
function detailsOf(
  alerts: readonly FiredAlert[],
  rateLimit: RateLimitTrip | undefined,
  derivedAction: string | undefined,
  approvalId: string | undefined,
  shadow: readonly ShadowDecision[],
  credentialId?: string,
): DecisionDetails | null {
  if (alerts.length === 0 && rateLimit === undefined && derivedAction === undefined && approvalId === undefined && shadow.length === 0 && credentialId === undefined) return null;
  const details: DecisionDetails = {};
  if (alerts.length > 0) details.alerts = alerts;
  if (rateLimit !== undefined) details.rateLimit = rateLimit;
  if (derivedAction !== undefined) details.derivedAction = derivedAction;
  if (approvalId !== undefined) details.approvalId = approvalId;
  if (shadow.length > 0) details.shadow = shadow;
  if (credentialId !== undefined) details.credentialId = credentialId;
  return details;
}

const SHADOW_OUTCOMES: ReadonlySet<unknown> = new Set(['allow', 'deny', 'require_approval']);

/** The shadow results an ingested entry names, well-formed ones only, at most MAX_FIRED_ALERTS of them. */
function shadowIn(details: unknown): ShadowDecision[] {
  const shadow = typeof details === 'object' && details !== null ? (details as { shadow?: unknown }).shadow : undefined;
  if (!Array.isArray(shadow)) return [];
  return shadow
    .slice(0, MAX_FIRED_ALERTS)
    .filter((item): item is ShadowDecision => {
      if (typeof item !== 'object' || item === null) return false;
      const { policy, decision, rule, reason } = item as Record<string, unknown>;
      return typeof policy === 'string' && SHADOW_OUTCOMES.has(decision) && (rule === null || typeof rule === 'string') && typeof reason === 'string';
    })
    .map(({ policy, decision, rule, reason }) => ({ policy: bounded(policy), decision, rule: rule === null ? null : bounded(rule), reason: bounded(reason) }));
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

function rateLimitIn(details: unknown): RateLimitTrip | undefined {
  const trip = typeof details === 'object' && details !== null ? (details as { rateLimit?: unknown }).rateLimit : undefined;
  if (typeof trip !== 'object' || trip === null) return undefined;
  const { limit, retryAfterSeconds } = trip as Record<string, unknown>;
  if (typeof limit !== 'string' || typeof retryAfterSeconds !== 'number' || !Number.isSafeInteger(retryAfterSeconds) || retryAfterSeconds < 0) return undefined;
  return { limit: bounded(limit), retryAfterSeconds };
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

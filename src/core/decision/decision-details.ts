import type { Decision, FiredAlert, RateLimitTrip, ShadowDecision } from '../policy-engine/types';
import type { CanaryDetails } from './canary-cohort';

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
  /** The canary rollout whose policy applied, and which version of it decided (docs/policies.md "Canary rollouts"). */
  canary?: CanaryDetails;
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
export function decisionDetails(
  decision: Decision,
  derivedAction?: string,
  approvalId?: string,
  shadow?: readonly ShadowDecision[],
  memory?: MemoryDetails,
  credentialId?: string,
  canary?: CanaryDetails,
): DecisionDetails | null {
  const details = detailsOf(decision.alerts ?? [], decision.rateLimit, derivedAction, approvalId, shadow ?? [], credentialId, canary);
  if (decision.budget === undefined && memory === undefined) return details;
  return { ...details, ...(decision.budget === undefined ? {} : { budget: decision.budget }), ...memory };
}

/**
 * An ingested decision entry's `details`, keeping only what is well formed (an edge sidecar's
 * entry is checked, not trusted): its alerts, limits, session and reservation; null when nothing is.
 */
export function ingestedDetails(details: unknown): DecisionDetails | null {
  const derived = typeof details === 'object' && details !== null ? (details as { derivedAction?: unknown }).derivedAction : undefined;
  const approvalId = typeof details === 'object' && details !== null ? (details as { approvalId?: unknown }).approvalId : undefined;
  const credentialId = typeof details === 'object' && details !== null ? (details as { credentialId?: unknown }).credentialId : undefined;
  const kept = detailsOf(
    firedAlertsIn(details),
    tripIn(details, 'rateLimit'),
    typeof derived === 'string' ? bounded(derived) : undefined,
    typeof approvalId === 'string' ? bounded(approvalId) : undefined,
    shadowIn(details),
    typeof credentialId === 'string' ? bounded(credentialId) : undefined,
    canaryIn(details),
  );
  const memory = memoryIn(details);
  return kept === null && memory === null ? null : { ...kept, ...memory };
}

/** Longest label list an ingested session names: a session keeps at most 64 labels, an agent 64 (session-store.ts). */
const MAX_INGESTED_LABELS = 64;
const LABEL_WORD = /^[a-z][a-z0-9_]{0,63}$/;
const INGESTED_SESSION_ID = /^[A-Za-z0-9._:-]{0,128}$/;

/** The session, budget and reservation an ingested entry names, each only when well formed; null when none is. */
function memoryIn(details: unknown): Pick<DecisionDetails, 'session' | 'budget' | 'reserved'> | null {
  if (typeof details !== 'object' || details === null) return null;
  const { reserved } = details as { reserved?: unknown };
  const memory: Pick<DecisionDetails, 'session' | 'budget' | 'reserved'> = {};
  const budget = tripIn(details, 'budget');
  if (budget !== undefined) memory.budget = budget;
  if (typeof reserved === 'number' && Number.isFinite(reserved) && reserved >= 0) memory.reserved = reserved;
  const session = sessionIn((details as { session?: unknown }).session);
  if (session !== undefined) memory.session = session;
  return Object.keys(memory).length === 0 ? null : memory;
}

function sessionIn(value: unknown): SessionDetails | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { id, labels, agentLabels, labelsAdded } = value as Record<string, unknown>;
  if (typeof id !== 'string' || !INGESTED_SESSION_ID.test(id)) return undefined;
  const read = labelsIn(labels);
  const agentRead = labelsIn(agentLabels);
  if (read === undefined || agentRead === undefined) return undefined;
  const added = labelsAdded === undefined ? undefined : labelsIn(labelsAdded);
  return { id, labels: read, agentLabels: agentRead, ...(added === undefined ? {} : { labelsAdded: added }) };
}

function labelsIn(value: unknown): string[] | undefined {
  if (!Array.isArray(value) || value.length > MAX_INGESTED_LABELS * 2) return undefined;
  return value.every((label) => typeof label === 'string' && LABEL_WORD.test(label)) ? (value as string[]) : undefined;
}

/** Details naming only what there is; null when there is nothing. */
function detailsOf(
  alerts: readonly FiredAlert[],
  rateLimit: RateLimitTrip | undefined,
  derivedAction: string | undefined,
  approvalId: string | undefined,
  shadow: readonly ShadowDecision[],
  credentialId?: string,
  canary?: CanaryDetails,
): DecisionDetails | null {
  if (alerts.length === 0 && rateLimit === undefined && derivedAction === undefined && approvalId === undefined && shadow.length === 0 && credentialId === undefined && canary === undefined) return null;
  const details: DecisionDetails = {};
  if (alerts.length > 0) details.alerts = alerts;
  if (rateLimit !== undefined) details.rateLimit = rateLimit;
  if (derivedAction !== undefined) details.derivedAction = derivedAction;
  if (approvalId !== undefined) details.approvalId = approvalId;
  if (shadow.length > 0) details.shadow = shadow;
  if (credentialId !== undefined) details.credentialId = credentialId;
  if (canary !== undefined) details.canary = canary;
  return details;
}

const COHORTS: ReadonlySet<unknown> = new Set(['canary', 'stable']);

/** The canary cohort an ingested entry names, when well formed. */
function canaryIn(details: unknown): CanaryDetails | undefined {
  const canary = typeof details === 'object' && details !== null ? (details as { canary?: unknown }).canary : undefined;
  if (typeof canary !== 'object' || canary === null) return undefined;
  const { rollout, policy, cohort } = canary as Record<string, unknown>;
  if (typeof rollout !== 'string' || typeof policy !== 'string' || !COHORTS.has(cohort)) return undefined;
  return { rollout: bounded(rollout), policy: bounded(policy), cohort: cohort as CanaryDetails['cohort'] };
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

function tripIn(details: unknown, field: 'rateLimit' | 'budget'): RateLimitTrip | undefined {
  const trip = typeof details === 'object' && details !== null ? (details as Record<string, unknown>)[field] : undefined;
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

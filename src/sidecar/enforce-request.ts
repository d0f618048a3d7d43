import { AppError } from '../core/common/app-error';
import { checkedSessionId } from '../core/decision/session-id';
import type { DecisionRequest } from '../core/decision/decision.service';

/** Most actions one `/enforce/batch` may ask about. */
export const MAX_BATCH_ACTIONS = 100;

/** One action asked about: `/enforce`'s body, or an item of `/enforce/batch`'s `actions`. */
export interface EnforceItem {
  action: string;
  resource: string;
  context: Record<string, unknown>;
  /** The approval a retry presents (docs/approvals.md): the id a pending answer gave. */
  approvalId?: string;
  /** The session the call belongs to (docs/policies.md "Sessions"). */
  sessionId?: string;
}

/** The agent id a body names, if it names one. */
export function agentIdOf(body: Record<string, unknown>): string | undefined {
  if (body.agentId === undefined) return undefined;
  if (typeof body.agentId !== 'string' || body.agentId === '') throw AppError.invalid('agentId must be a non-empty string');
  return body.agentId;
}

/** `/enforce`'s body as an item; a 400 naming the field when it is not one. */
export function enforceItem(value: unknown, field = ''): EnforceItem {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw AppError.invalid(`${field || 'body'} must be a JSON object`);
  const item = value as Record<string, unknown>;
  if (typeof item.action !== 'string' || item.action === '') throw AppError.invalid(`${field}action must be a non-empty string`);
  if (item.resource !== undefined && typeof item.resource !== 'string') throw AppError.invalid(`${field}resource must be a string`);
  if (item.context !== undefined && (typeof item.context !== 'object' || item.context === null || Array.isArray(item.context))) {
    throw AppError.invalid(`${field}context must be an object`);
  }
  if (item.context !== undefined) checkContext(item.context as Record<string, unknown>, `${field}context.`);
  if (item.approvalId !== undefined && (typeof item.approvalId !== 'string' || item.approvalId === '' || item.approvalId.length > 256)) {
    throw AppError.invalid(`${field}approvalId must be a non-empty string of at most 256 characters`);
  }
  return {
    action: item.action,
    resource: (item.resource as string | undefined) ?? '',
    context: (item.context as Record<string, unknown> | undefined) ?? {},
    approvalId: item.approvalId as string | undefined,
    sessionId: checkedSessionId(item.sessionId, `${field}sessionId`),
  };
}

/**
 * The members of `context` the decision reads: a wrong-typed one must be a 400 (as the gateway's
 * PDP answers), not be replaced by a default, which decides without it: args serialised to a
 * string skipped every args-based deny rule.
 */
function checkContext(context: Record<string, unknown>, prefix: string): void {
  const { args, plugin } = context;
  if (args !== undefined && (typeof args !== 'object' || args === null || Array.isArray(args))) throw AppError.invalid(`${prefix}args must be a JSON object`);
  if (plugin !== undefined && typeof plugin !== 'string') throw AppError.invalid(`${prefix}plugin must be a string`);
  if (context.function !== undefined && typeof context.function !== 'string') throw AppError.invalid(`${prefix}function must be a string`);
}

/** `/enforce/batch`'s actions. */
export function batchItems(body: Record<string, unknown>): EnforceItem[] {
  if (!Array.isArray(body.actions) || body.actions.length === 0) throw AppError.invalid('actions must be a non-empty array of {action, resource, context}');
  if (body.actions.length > MAX_BATCH_ACTIONS) throw AppError.invalid(`actions must hold at most ${MAX_BATCH_ACTIONS} items`);
  return body.actions.map((item, index) => enforceItem(item, `actions[${index}].`));
}

/**
 * The decision request of an item (docs/architecture.md "Edge sidecar"): action and
 * resource from the body; `plugin` and `function` from `context` if given, else as the proxy
 * maps an action (`http`, and the action's verb: `read:docs/a` → `read`), so the same action
 * decides the same through the gateway's proxy and here; `args` from `context.args`.
 */
export function decisionRequestOf(item: EnforceItem, traceId: string): DecisionRequest {
  const { context } = item;
  const colon = item.action.indexOf(':');
  const args = typeof context.args === 'object' && context.args !== null && !Array.isArray(context.args) ? (context.args as Record<string, unknown>) : {};
  // A caller naming its plugin and function beside the action is decided on both (docs/security.md).
  const named = typeof context.plugin === 'string' && typeof context.function === 'string';
  return {
    source: 'sidecar',
    traceId,
    action: item.action,
    derivedAction: named ? `${context.plugin as string}.${context.function as string}` : undefined,
    resource: item.resource,
    plugin: typeof context.plugin === 'string' ? context.plugin : 'http',
    function: typeof context.function === 'string' ? context.function : colon > 0 ? item.action.slice(0, colon) : item.action,
    args,
    context,
    approvalId: item.approvalId,
    sessionId: item.sessionId,
  };
}

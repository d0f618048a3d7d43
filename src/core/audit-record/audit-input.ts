/**
 * The decision input as the audit trail stores it: without what the entry's own columns already
 * hold (the agent's id, name, tier and organization, and the action) and without empty context
 * or direct delegation, so each entry writes, hashes and indexes fewer bytes. `expandInput`
 * rebuilds the complete input for readers (the audit API, backtests).
 */
export function compactInput(input: unknown): unknown {
  if (!isRecord(input)) return input;
  const { agent, action: _action, context, delegation, ...rest } = input;
  const compact: Record<string, unknown> = rest;
  const tags = isRecord(agent) ? agent.tags : undefined;
  if (Array.isArray(tags) && tags.length > 0) compact.agent_tags = tags;
  if (isRecord(context) && Object.keys(context).length > 0) compact.context = context;
  if (isRecord(delegation) && !(delegation.depth === 1 && Array.isArray(delegation.chain) && delegation.chain.length === 0)) compact.delegation = delegation;
  return compact;
}

/** The columns an input was compacted against. */
export interface InputColumns {
  orgId: string;
  agentId: string | null;
  agentName: string | null;
  trustTier: string | null;
  action: string;
}

/** The complete decision input of a stored entry (null when none was recorded). */
export function expandInput(stored: unknown, columns: InputColumns): Record<string, unknown> | null {
  if (!isRecord(stored)) return null;
  const { agent_tags: tags, context, delegation, ...rest } = stored;
  return {
    agent: { id: columns.agentId ?? '', name: columns.agentName ?? '', trust_tier: columns.trustTier ?? '', tags: Array.isArray(tags) ? tags : [], org: columns.orgId },
    action: columns.action,
    ...rest,
    context: isRecord(context) ? context : {},
    delegation: isRecord(delegation) ? delegation : { depth: 1, chain: [] },
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

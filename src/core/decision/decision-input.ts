import type { AgentFacts, DecisionInput, DelegationFacts, SessionFacts } from '../policy-engine/types';

const EMPTY: Readonly<Record<string, unknown>> = Object.freeze({});
const DIRECT: DelegationFacts = Object.freeze({ depth: 1, chain: Object.freeze([]) as readonly string[] });

/**
 * A complete DecisionInput from a partial one (simulation requests, recorded audit inputs):
 * missing parts become empty values, so conditions read them as missing.
 */
export function completeInput(partial: unknown, orgId: string): DecisionInput {
  const source = record(partial);
  const agent = record(source.agent);
  const delegation = record(source.delegation);
  const facts: AgentFacts = {
    id: text(agent.id),
    name: text(agent.name),
    trust_tier: text(agent.trust_tier) || 'unverified',
    tags: Array.isArray(agent.tags) ? agent.tags.filter((tag): tag is string => typeof tag === 'string') : [],
    org: text(agent.org) || orgId,
  };
  const chain = Array.isArray(delegation.chain) ? delegation.chain.filter((id): id is string => typeof id === 'string') : [];
  const input: DecisionInput = {
    agent: facts,
    action: text(source.action),
    resource: text(source.resource),
    plugin: text(source.plugin),
    function: text(source.function),
    args: isRecord(source.args) ? source.args : EMPTY,
    context: isRecord(source.context) ? source.context : EMPTY,
    delegation: chain.length === 0 && delegation.depth === undefined ? DIRECT : { depth: typeof delegation.depth === 'number' ? delegation.depth : chain.length || 1, chain },
  };
  const session = sessionFactsOf(source.session);
  if (session !== undefined) input.session = session;
  return input;
}

/**
 * The session facts a recorded input carries (what the call read before it was decided,
 * docs/policies.md "Seen"): labels as lists of strings, calls as counts; anything else in them
 * is dropped, and an input without them carries none.
 */
function sessionFactsOf(value: unknown): SessionFacts | undefined {
  if (!isRecord(value)) return undefined;
  const calls: Record<string, number> = Object.create(null) as Record<string, number>;
  if (isRecord(value.calls)) {
    for (const [action, count] of Object.entries(value.calls)) if (typeof count === 'number' && Number.isFinite(count) && count > 0) calls[action] = count;
  }
  return { id: text(value.id), labels: strings(value.labels), agent_labels: strings(value.agent_labels), calls };
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];
}

function record(value: unknown): Record<string, unknown> {
  return isRecord(value) ? value : {};
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

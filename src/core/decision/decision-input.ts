import type { AgentFacts, DecisionInput, DelegationFacts } from '../policy-engine/types';

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
  return {
    agent: facts,
    action: text(source.action),
    resource: text(source.resource),
    plugin: text(source.plugin),
    function: text(source.function),
    args: isRecord(source.args) ? source.args : EMPTY,
    context: isRecord(source.context) ? source.context : EMPTY,
    delegation: chain.length === 0 && delegation.depth === undefined ? DIRECT : { depth: typeof delegation.depth === 'number' ? delegation.depth : chain.length || 1, chain },
  };
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

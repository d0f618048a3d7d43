import type { AgentField, InputField, OrgField, PathRef, ToolField } from './ir';
import type { DecisionInput } from './types';

/** Reads one value out of a DecisionInput; undefined when missing. */
export type ValueReader = (input: DecisionInput) => unknown;

const hasOwn = Object.prototype.hasOwnProperty;
// An input without session facts has no labels: `session.labels.has(...)` is false, never missing.
const NO_LABELS: readonly string[] = Object.freeze([]);

/** An own property of an object, else undefined: `__proto__`, `constructor`, `toString` are just missing keys. */
export function ownValue(container: unknown, key: string): unknown {
  if (typeof container !== 'object' || container === null) return undefined;
  const value = (container as Record<string, unknown>)[key];
  return value !== undefined && hasOwn.call(container, key) ? value : undefined;
}

/** A reader specialised for the path, resolved once at compile time. */
export function pathReader(path: PathRef): ValueReader {
  switch (path.kind) {
    case 'agent':
      return agentReader(path.field);
    case 'input':
      return inputReader(path.field);
    case 'delegation':
      return path.field === 'depth' ? (input) => input.delegation.depth : (input) => input.delegation.chain;
    case 'org':
      return orgReader(path.field);
    case 'tool':
      return toolReader(path.field);
    case 'session':
      return path.field === 'id' ? (input) => input.session?.id ?? '' : (input) => input.session?.labels ?? NO_LABELS;
    case 'agent-labels':
      return (input) => input.session?.agent_labels ?? NO_LABELS;
    case 'args':
      return path.segments.length === 1 ? argReader(path.segments[0]) : nestedReader((input) => input.args, path.segments);
    case 'context':
      return path.segments.length === 1
        ? contextReader(path.segments[0])
        : nestedReader((input) => input.context, path.segments);
  }
}

function agentReader(field: AgentField): ValueReader {
  switch (field) {
    case 'id':
      return (input) => input.agent.id;
    case 'name':
      return (input) => input.agent.name;
    case 'trust_tier':
      return (input) => input.agent.trust_tier;
    case 'tags':
      return (input) => input.agent.tags;
    case 'org':
      return (input) => input.agent.org;
  }
}

// An input without `tool` (not an MCP call) reads every tool path as missing.
function toolReader(field: ToolField): ValueReader {
  switch (field) {
    case 'server':
      return (input) => input.tool?.server;
    case 'name':
      return (input) => input.tool?.name;
    case 'pinned':
      return (input) => input.tool?.pinned;
  }
}

// An input without `org` (a transport that does not supply it) reads every org path as missing.
function orgReader(field: OrgField): ValueReader {
  switch (field) {
    case 'id':
      return (input) => input.org?.id;
    case 'plan':
      return (input) => input.org?.plan;
    case 'usage.policy_checks':
      return (input) => input.org?.usage?.policy_checks;
    case 'usage.agents':
      return (input) => input.org?.usage?.agents;
  }
}

function inputReader(field: InputField): ValueReader {
  switch (field) {
    case 'action':
      return (input) => input.action;
    case 'resource':
      return (input) => input.resource;
    case 'plugin':
      return (input) => input.plugin;
    case 'function':
      return (input) => input.function;
  }
}

// The one-segment readers are the hot ones: no indirection through a base reader, and the
// own-property check only runs when the plain read found something (most keys are absent).
function argReader(key: string): ValueReader {
  return (input) => {
    const args = input.args;
    if (typeof args !== 'object' || args === null) return undefined;
    const value = args[key];
    return value !== undefined && hasOwn.call(args, key) ? value : undefined;
  };
}

function contextReader(key: string): ValueReader {
  return (input) => {
    const context = input.context;
    if (typeof context !== 'object' || context === null) return undefined;
    const value = context[key];
    return value !== undefined && hasOwn.call(context, key) ? value : undefined;
  };
}

function nestedReader(base: ValueReader, segments: readonly string[]): ValueReader {
  if (segments.length === 2) {
    const [first, second] = segments;
    return (input) => ownValue(ownValue(base(input), first), second);
  }
  return (input) => {
    let value = base(input);
    for (let i = 0; i < segments.length && value !== undefined; i++) value = ownValue(value, segments[i]);
    return value;
  };
}

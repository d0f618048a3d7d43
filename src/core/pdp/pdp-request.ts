import { AppError } from '../common/app-error';
import { checkedSessionId } from '../decision/session-id';

/** A PDP question, whichever transport brought it (gRPC, proto3 JSON, `/v1/check`). */
export interface PdpRequest {
  agentId: string;
  action: string;
  resource: string;
  plugin: string;
  function: string;
  args: Readonly<Record<string, unknown>>;
  context: Readonly<Record<string, unknown>>;
  trustTier: string;
  traceId: string;
  /** The approval of an earlier pending answer, for this very request ('' when none). */
  approvalId: string;
  /** The session the call belongs to ('' for the agent's own scope; docs/policies.md "Sessions"). */
  sessionId: string;
}

const MAX_ID = 256;
const MAX_TEXT = 2048;

/** The JSON form of PolicyRequest (proto3 JSON: camelCase or the proto's snake_case names), checked field by field. */
export function pdpRequestFromJson(body: unknown): PdpRequest {
  const source = objectOf(body, 'body');
  const field = (camel: string, snake: string) => (source[camel] !== undefined ? source[camel] : source[snake]);
  known(source, PROTO_JSON_FIELDS, 'PolicyRequest');
  return checked({
    agentId: text(field('agentId', 'agent_id'), 'agentId'),
    action: text(field('action', 'action'), 'action'),
    resource: text(field('resource', 'resource'), 'resource'),
    plugin: text(field('plugin', 'plugin'), 'plugin'),
    function: text(field('function', 'function'), 'function'),
    args: optionalObject(field('args', 'args'), 'args'),
    context: optionalObject(field('context', 'context'), 'context'),
    trustTier: text(field('trustTier', 'trust_tier'), 'trustTier'),
    traceId: text(field('traceId', 'trace_id'), 'traceId'),
    approvalId: text(field('approvalId', 'approval_id'), 'approvalId'),
    sessionId: text(field('sessionId', 'session_id'), 'sessionId'),
  });
}

/** The body of `POST /v1/check` (docs/pdp.md "Check, act, report"). */
export function pdpRequestFromCheck(body: unknown): PdpRequest {
  const source = objectOf(body, 'body');
  known(source, CHECK_FIELDS, 'the check');
  return checked({
    agentId: text(source.agentId, 'agentId'),
    action: text(source.action, 'action'),
    resource: text(source.resource, 'resource'),
    plugin: required(text(source.plugin, 'plugin'), 'plugin'),
    function: required(text(source.function, 'function'), 'function'),
    args: optionalObject(source.arguments, 'arguments'),
    context: optionalObject(source.context, 'context'),
    trustTier: text(source.trustTier, 'trustTier'),
    traceId: text(source.traceId, 'traceId'),
    approvalId: text(source.approvalId, 'approvalId'),
    sessionId: text(source.sessionId, 'sessionId'),
  });
}

const PROTO_JSON_FIELDS = new Set(['agentId', 'agent_id', 'action', 'resource', 'plugin', 'function', 'args', 'context', 'trustTier', 'trust_tier', 'traceId', 'trace_id', 'approvalId', 'approval_id', 'sessionId', 'session_id']);
const CHECK_FIELDS = new Set(['agentId', 'plugin', 'function', 'arguments', 'trustTier', 'context', 'action', 'resource', 'traceId', 'approvalId', 'sessionId']);

/** The longest text of each field, on every transport (gRPC strings carry no limit of their own). */
const TEXT_LIMITS: ReadonlyArray<readonly [TextField, number]> = [
  ['agentId', MAX_ID],
  ['action', MAX_TEXT],
  ['resource', MAX_TEXT],
  ['plugin', MAX_ID],
  ['function', MAX_ID],
  ['trustTier', MAX_ID],
  ['traceId', MAX_ID],
  ['approvalId', MAX_ID],
];
type TextField = 'agentId' | 'action' | 'resource' | 'plugin' | 'function' | 'trustTier' | 'traceId' | 'approvalId';

/** What every transport requires: an agent, and an action or the plugin and function to make one of, each text within its limit. */
export function checked(request: PdpRequest): PdpRequest {
  required(request.agentId, 'agentId');
  checkedSessionId(request.sessionId, 'sessionId');
  for (const [name, max] of TEXT_LIMITS) if (request[name].length > max) throw AppError.invalid(`${name} must be at most ${max} characters`);
  if (request.action === '' && (request.plugin === '' || request.function === '')) {
    throw AppError.invalid('action is required unless plugin and function are both given');
  }
  return request;
}

function objectOf(value: unknown, name: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw AppError.invalid(`${name} must be a JSON object`);
  return value as Record<string, unknown>;
}

function known(source: Record<string, unknown>, fields: ReadonlySet<string>, what: string): void {
  for (const key of Object.keys(source)) if (!fields.has(key)) throw AppError.invalid(`unknown field ${key} in ${what}`);
}

/** A text field's value ('' when absent); its length is held to TEXT_LIMITS by `checked`, on every transport. */
function text(value: unknown, name: string): string {
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string') throw AppError.invalid(`${name} must be a string`);
  return value;
}

function required(value: string, name: string): string {
  if (value === '') throw AppError.invalid(`${name} is required`);
  return value;
}

function optionalObject(value: unknown, name: string): Readonly<Record<string, unknown>> {
  if (value === undefined || value === null) return EMPTY;
  return objectOf(value, name);
}

const EMPTY: Readonly<Record<string, unknown>> = Object.freeze({});

/** The body's trace id, else the request's (its X-Trace-ID, or a new one). */
export function traced(request: PdpRequest, traceId: string): PdpRequest {
  return request.traceId === '' ? { ...request, traceId } : request;
}

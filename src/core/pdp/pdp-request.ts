import { AppError } from '../common/app-error';
import { checkedSessionId, MAX_SESSION_ID_LENGTH } from '../decision/session-id';

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

/**
 * One field of a lean request body, defined once: what the parser checks and what the OpenAPI
 * document says of it (lean-routes.openapi.ts) come from this, not from a DTO kept beside it.
 */
export interface BodyField {
  /** The PdpRequest member it fills. */
  into: keyof PdpRequest;
  kind: 'text' | 'object';
  /** The proto's snake_case name, which proto3 JSON accepts too. */
  snake?: string;
  /** Refused when absent or empty, in the order of the fields (agentId is required on every transport, by `checked`). */
  required?: true;
  description?: string;
  example?: unknown;
}

/** A lean request body: its fields in the order they are checked; any other field is refused. */
export interface BodySchema {
  /** What an unknown field's 400 calls the body. */
  what: string;
  fields: Readonly<Record<string, BodyField>>;
}

const AGENT_ID = { into: 'agentId', kind: 'text', description: 'The agent making the call (of the caller’s organization)', example: 'agent_3f9a0c1b2d4e5f6a7b8c9d0e' } as const;
const APPROVAL_ID = { into: 'approvalId', kind: 'text', description: 'The approval of an earlier `pending` answer, for this very request (docs/approvals.md)' } as const;
const SESSION = { into: 'sessionId', kind: 'text', description: 'The session the call belongs to: 1-128 of A-Z a-z 0-9 . _ : - (docs/policies.md "Sessions")' } as const;
const TRACE_ID = { into: 'traceId', kind: 'text', description: 'Client trace id (X-Trace-ID works too)' } as const;
const TRUST_TIER = { into: 'trustTier', kind: 'text', description: 'The adapter’s tier hint (standard, elevated, restricted); recorded as context.adapter_trust_tier. The agent’s record decides agent.trust_tier.', example: 'standard' } as const;

/** The body of `POST /v1/check` (docs/pdp.md "Check, act, report"). */
export const CHECK_REQUEST: BodySchema = {
  what: 'the check',
  fields: {
    agentId: AGENT_ID,
    action: { into: 'action', kind: 'text', description: 'The action policies match on; `<plugin>.<function>` when absent' },
    resource: { into: 'resource', kind: 'text' },
    plugin: { into: 'plugin', kind: 'text', required: true, example: 'FilePlugin' },
    function: { into: 'function', kind: 'text', required: true, example: 'ReadFile' },
    arguments: { into: 'args', kind: 'object', description: 'The call’s arguments, read by policies as args.<name>', example: { path: '/etc/passwd' } },
    context: { into: 'context', kind: 'object', description: 'Enriched context, read by policies as context.<name>', example: { data_class: 'pii' } },
    trustTier: TRUST_TIER,
    traceId: TRACE_ID,
    approvalId: APPROVAL_ID,
    sessionId: SESSION,
  },
};

/** PolicyRequest in proto3 JSON (`POST /api/v1/pdp/evaluate`): camelCase or the proto's snake_case names. */
export const POLICY_REQUEST_JSON: BodySchema = {
  what: 'PolicyRequest',
  fields: {
    agentId: { ...AGENT_ID, snake: 'agent_id' },
    action: { into: 'action', kind: 'text', description: '`<plugin>.<function>` when empty', example: 'FilePlugin.ReadFile' },
    resource: { into: 'resource', kind: 'text' },
    plugin: { into: 'plugin', kind: 'text', example: 'FilePlugin' },
    function: { into: 'function', kind: 'text', example: 'ReadFile' },
    args: { into: 'args', kind: 'object', example: { path: '/tmp/a' } },
    context: { into: 'context', kind: 'object' },
    trustTier: { ...TRUST_TIER, snake: 'trust_tier' },
    traceId: { ...TRACE_ID, snake: 'trace_id' },
    approvalId: { ...APPROVAL_ID, snake: 'approval_id' },
    sessionId: { ...SESSION, snake: 'session_id' },
  },
};

/** The JSON form of PolicyRequest, checked field by field. */
export function pdpRequestFromJson(body: unknown): PdpRequest {
  return parsed(body, POLICY_REQUEST_JSON_PARSER);
}

/** The body of `POST /v1/check`. */
export function pdpRequestFromCheck(body: unknown): PdpRequest {
  return parsed(body, CHECK_REQUEST_PARSER);
}

/** The lean PDP routes' request schemas, added to the OpenAPI document of each app (lean-routes.openapi.ts names them). */
export function pdpRequestSchemas(): Record<string, Record<string, unknown>> {
  return { CheckRequest: openApiSchemaOf(CHECK_REQUEST), PolicyRequestJson: openApiSchemaOf(POLICY_REQUEST_JSON) };
}

/** A schema as the parser walks it: its fields as a list, and every name it takes. */
interface Parser {
  what: string;
  fields: ReadonlyArray<readonly [string, BodyField]>;
  names: ReadonlySet<string>;
}

function parserOf(schema: BodySchema): Parser {
  const fields = Object.entries(schema.fields);
  const names = new Set<string>();
  for (const [name, field] of fields) {
    names.add(name);
    if (field.snake !== undefined) names.add(field.snake);
  }
  return { what: schema.what, fields, names };
}

const CHECK_REQUEST_PARSER = parserOf(CHECK_REQUEST);
const POLICY_REQUEST_JSON_PARSER = parserOf(POLICY_REQUEST_JSON);

function parsed(body: unknown, parser: Parser): PdpRequest {
  const source = objectOf(body, 'body');
  known(source, parser.names, parser.what);
  const request: Record<string, unknown> = {};
  for (const [name, field] of parser.fields) {
    const value = source[name] !== undefined || field.snake === undefined ? source[name] : source[field.snake];
    request[field.into] = field.kind === 'object' ? optionalObject(value, name) : field.required ? required(text(value, name), name) : text(value, name);
  }
  return checked(request as unknown as PdpRequest);
}

/** The OpenAPI schema of a lean request body, from the definition its parser checks. */
export function openApiSchemaOf(schema: BodySchema): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  const required = ['agentId'];
  for (const [name, field] of Object.entries(schema.fields)) {
    const limit = TEXT_LIMITS.find(([into]) => into === field.into)?.[1] ?? (field.into === 'sessionId' ? MAX_SESSION_ID_LENGTH : undefined);
    properties[name] = {
      type: field.kind === 'object' ? 'object' : 'string',
      ...(limit === undefined ? {} : { maxLength: limit }),
      ...(field.description === undefined ? {} : { description: field.description }),
      ...(field.example === undefined ? {} : { example: field.example }),
    };
    if (field.required && !required.includes(name)) required.push(name);
  }
  return { type: 'object', required, properties, additionalProperties: false };
}

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

import { AppError } from '../../core/common/app-error';
import {
  AUDIT_ENTRY_ID,
  AUDIT_ENTRY_ID_PROBLEM,
  AuditIngestDto,
  IngestedEntryDto,
  LONG_TEXT_MAX,
  MAX_ENTRY_TS,
  MAX_INGEST_ENTRIES,
  SHORT_TEXT_MAX,
  SIDECAR_ID_MESSAGE,
} from './bundles.dto';
import { SIDECAR_ID_FORMAT } from '../../core/edge-protocol/sidecar-protocol';

/** A field's check: null when the value passes, else what is wrong with it (after the field's name). */
type Check = (value: unknown) => string | null;

const isString: Check = (value) => (typeof value === 'string' ? null : 'must be a string');
const boolean: Check = (value) => (typeof value === 'boolean' ? null : 'must be a boolean value');
const number: Check = (value) => (typeof value === 'number' && Number.isFinite(value) ? null : 'must be a number conforming to the specified constraints');
const anything: Check = () => null;

function text(maxLength: number): Check {
  return (value) => {
    if (typeof value !== 'string') return 'must be a string';
    return value.length <= maxLength ? null : `must be shorter than or equal to ${maxLength} characters`;
  };
}

function integer(min = -Infinity, max = Infinity): Check {
  return (value) => {
    if (typeof value !== 'number' || !Number.isInteger(value)) return 'must be an integer number';
    if (value < min) return `must not be less than ${min}`;
    return value <= max ? null : `must not be greater than ${max}`;
  };
}

function oneOf(values: readonly string[]): Check {
  return (value) => (typeof value === 'string' && values.includes(value) ? null : `must be one of the following values: ${values.join(', ')}`);
}

/** As class-validator's @IsOptional: null and undefined pass. */
function optional(check: Check): Check {
  return (value) => (value === undefined || value === null ? null : check(value));
}

const stringArray: Check = (value) => (Array.isArray(value) && value.every((item) => typeof item === 'string') ? null : 'must be an array of strings');

/** The rules of IngestedEntryDto's decorators, field by field (ingest-batch.spec.ts holds the two to the same answers). */
const ENTRY_CHECKS: Readonly<Record<keyof IngestedEntryDto, Check>> = {
  seq: integer(1),
  id: (value) => (typeof value === 'string' && AUDIT_ENTRY_ID.test(value) ? null : AUDIT_ENTRY_ID_PROBLEM),
  ts: integer(0, MAX_ENTRY_TS),
  orgId: optional(isString),
  source: optional(isString),
  kind: optional(oneOf(['decision', 'outcome'])),
  traceId: optional(text(SHORT_TEXT_MAX)),
  agentId: optional(text(SHORT_TEXT_MAX)),
  agentName: optional(text(SHORT_TEXT_MAX)),
  trustTier: optional(text(SHORT_TEXT_MAX)),
  action: text(LONG_TEXT_MAX),
  method: optional(text(SHORT_TEXT_MAX)),
  path: optional(text(LONG_TEXT_MAX)),
  decision: oneOf(['allow', 'deny']),
  enforced: boolean,
  rateLimited: boolean,
  policyName: optional(text(SHORT_TEXT_MAX)),
  rule: optional(text(SHORT_TEXT_MAX)),
  reason: optional(text(LONG_TEXT_MAX)),
  decisionLatencyMs: optional(number),
  latencyMs: optional(number),
  status: optional(integer()),
  upstreamStatus: optional(integer()),
  delegationChain: optional(stringArray),
  input: anything,
  details: anything,
};
const ENTRY_FIELDS = Object.keys(ENTRY_CHECKS) as Array<keyof IngestedEntryDto>;

interface FieldProblem {
  field: string;
  message: string;
}

/**
 * The body of `POST /api/v1/audit/ingest` checked by AuditIngestDto's rules, answering as the
 * global ValidationPipe does (one 400 `invalid_request` naming every field), but by hand: a
 * sidecar sends batches of 500 entries, and class-transformer and class-validator took 44% of
 * the gateway's main thread on them, holding its ingest at about 12k entries a second
 * (docs/architecture.md, "Audit: the write-ahead log"). The DTO classes still describe the body
 * in Swagger.
 */
export function ingestBatchOf(body: unknown): AuditIngestDto {
  const problems: FieldProblem[] = [];
  if (!isRecord(body)) throw AppError.invalid('the request body must be a JSON object');
  for (const key of Object.keys(body)) if (key !== 'sidecarId' && key !== 'entries') problems.push(unknownField(key));
  if (typeof body.sidecarId !== 'string' || !SIDECAR_ID_FORMAT.test(body.sidecarId)) {
    problems.push({ field: 'sidecarId', message: SIDECAR_ID_MESSAGE });
  }
  const entries = body.entries;
  if (!Array.isArray(entries)) problems.push({ field: 'entries', message: 'entries must be an array' });
  else if (entries.length > MAX_INGEST_ENTRIES) problems.push({ field: 'entries', message: `entries must contain no more than ${MAX_INGEST_ENTRIES} elements` });
  else for (let index = 0; index < entries.length; index++) checkEntry(entries[index], `entries.${index}`, problems);
  if (problems.length > 0) throw AppError.invalid(problems.map((problem) => problem.message).join('; '), { fields: problems });
  return body as unknown as AuditIngestDto;
}

function checkEntry(entry: unknown, path: string, problems: FieldProblem[]): void {
  if (!isRecord(entry)) {
    problems.push({ field: path, message: `${path} must be an object` });
    return;
  }
  for (const field of ENTRY_FIELDS) {
    const problem = ENTRY_CHECKS[field](entry[field]);
    if (problem !== null) problems.push({ field: `${path}.${field}`, message: `${path}.${field} ${problem}` });
  }
  for (const key in entry) if (!Object.hasOwn(ENTRY_CHECKS, key)) problems.push(unknownField(`${path}.${key}`));
}

function unknownField(field: string): FieldProblem {
  return { field, message: `unknown field ${field}` };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

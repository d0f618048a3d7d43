import { newId } from '../common/ids';
import { AUDIT_CONTENT_COLUMNS, AuditColumn, copyText } from './audit-entry';
import { compactInput } from './audit-input';
import type { AuditSanitizer } from './audit-sanitizer';

/** Where an audit entry came from: a decision's entry point, or `admin` for admin changes. */
export const AUDIT_SOURCES = ['proxy', 'pdp', 'check', 'sidecar', 'mcp', 'admin'] as const;
export type AuditSource = (typeof AUDIT_SOURCES)[number];

/** `decision`: a policy decision; `outcome`: what an adapter reported of a call after it ran (`/v1/audit`); `admin`: a change made through the admin API or CLI. */
export type AuditKind = 'decision' | 'outcome' | 'admin';

/**
 * What callers hand to the AuditWriter. Plain data, built once per request; the writer cleans
 * and redacts it as it is queued (`queuedAudit`), then assigns id, sequence and hashes off the
 * request path.
 */
export interface AuditRecord {
  /** The entry's id (`aud_…`); given when the caller must name the entry at once (a PDP answer's decision_id), else assigned as it is queued. */
  id?: string;
  /** Milliseconds since the epoch. */
  ts: number;
  orgId: string;
  source: AuditSource;
  kind: AuditKind;
  traceId: string | null;
  agentId: string | null;
  agentName: string | null;
  trustTier: string | null;
  action: string;
  method: string | null;
  /** Path without its query string: query values are arguments and get redacted there. */
  path: string | null;
  decision: 'allow' | 'deny';
  /** False when MODE=audit let a would-be denial through. */
  enforced: boolean;
  rateLimited: boolean;
  policyName: string | null;
  rule: string | null;
  reason: string | null;
  /** Time spent deciding. */
  decisionLatencyMs: number | null;
  /** Time of the whole request, as the gateway saw it. */
  latencyMs: number | null;
  /** Status the caller received. */
  status: number | null;
  /** Status the upstream answered, when the request was forwarded. */
  upstreamStatus: number | null;
  delegationChain: readonly string[] | null;
  /** The decision input (redacted before storage); kept so backtests can replay it. */
  input: unknown;
  /** Admin changes: actor, previous and new values; decisions: the `alert` rules that fired and the rate limit that tripped (`{alerts, rateLimit}`, decision-details.ts), else null; outcomes: what the adapter reported. */
  details: unknown;
}

/**
 * A record as the AuditWriter queues it and hands it to the sink: one string,
 * `<id>\t<ts>\t<org_id>\t<content>`, where `ts` is milliseconds since the epoch, `org_id` is in COPY
 * text format and `content` is the entry's canonical text from `source` on (`contentText`): its
 * texts cleaned (bounded and storable, see AuditSanitizer), latencies rounded, payloads
 * compacted, redacted and serialised to the JSON text they are stored as. So the queue holds no
 * object of the request (only this text, as UTF-8 bytes: see AuditQueue), and the audit worker
 * only has to prefix each with its time and chain position.
 */
export type QueuedAudit = string;

/** How the writer turns each content column of a record into its canonical text. */
const WRITE_FORMAT = { Text: 0, Boolean: 1, Integer: 2, Latency: 3, Json: 4, Input: 5 } as const;
type WriteFormat = (typeof WRITE_FORMAT)[keyof typeof WRITE_FORMAT];

const WRITTEN_FIELDS = AUDIT_CONTENT_COLUMNS.map((column) => column.field);
const WRITE_FORMATS = AUDIT_CONTENT_COLUMNS.map(writeFormat);

function writeFormat({ field, type }: AuditColumn): WriteFormat {
  if (field === 'input') return WRITE_FORMAT.Input;
  switch (type) {
    case 'boolean':
      return WRITE_FORMAT.Boolean;
    case 'integer':
      return WRITE_FORMAT.Integer;
    case 'double precision':
      return WRITE_FORMAT.Latency;
    case 'json':
      return WRITE_FORMAT.Json;
    default:
      return WRITE_FORMAT.Text;
  }
}

/**
 * The queued form of `record`, cleaned by `clean`: its content columns, in the order of
 * AUDIT_ENTRY_COLUMNS, written straight into the canonical text (what `contentText` makes of
 * the stored entry), with no intermediate object.
 */
export function queuedAudit(record: AuditRecord, clean: AuditSanitizer): QueuedAudit {
  const values = record as unknown as Record<string, unknown>;
  let text = `${record.id ?? newId('aud')}\t${record.ts}\t${copyText(record.orgId)}`;
  for (let i = 0; i < WRITTEN_FIELDS.length; i++) text += `\t${writtenText(values[WRITTEN_FIELDS[i]], WRITE_FORMATS[i], clean)}`;
  return text;
}

function writtenText(value: unknown, format: WriteFormat, clean: AuditSanitizer): string {
  switch (format) {
    case WRITE_FORMAT.Text:
      return copyText(clean.text(value as string | null));
    case WRITE_FORMAT.Boolean:
      return value ? 't' : 'f';
    case WRITE_FORMAT.Integer:
      return value === null ? '\\N' : String(value);
    case WRITE_FORMAT.Latency: {
      const rounded = roundMs(value as number | null);
      return rounded === null ? '\\N' : String(rounded);
    }
    case WRITE_FORMAT.Input:
      return copyText(clean.serialize(compactInput(value)));
    default:
      return copyText(clean.serialize(value));
  }
}

/** The parts of a queued record. */
export interface QueuedParts {
  id: string;
  ts: number;
  /** In COPY text format, as it goes into the canonical text. */
  orgIdText: string;
  content: string;
}

/** Splits a queued record into its parts. */
export function queuedParts(queued: QueuedAudit): QueuedParts {
  const afterId = queued.indexOf('\t');
  const afterTs = queued.indexOf('\t', afterId + 1);
  const afterOrg = queued.indexOf('\t', afterTs + 1);
  return {
    id: queued.slice(0, afterId),
    ts: Number(queued.slice(afterId + 1, afterTs)),
    orgIdText: queued.slice(afterTs + 1, afterOrg),
    content: queued.slice(afterOrg + 1),
  };
}

/** Latencies are kept to the microsecond, so the stored value hashes the same when read back. */
export function roundMs(value: number | null): number | null {
  return value === null || !Number.isFinite(value) ? null : Math.round(value * 1000) / 1000;
}

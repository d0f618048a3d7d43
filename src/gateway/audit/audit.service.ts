import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AdminPrincipal } from '../common/admin-principal';
import { AppError } from '../../core/common/app-error';
import { chainHash } from './audit-chain';
import { ALL_AUDIT_FIELDS, auditSelectList, ChainedAudit, readAudit } from '../../core/audit-record/audit-entry';
import { expandInput } from '../../core/audit-record/audit-input';
import { AuditEntryView, AuditPage, AuditQueryDto, AuditVerification, ChainBreak } from './audit.dto';
import { AuditWriter } from './audit-writer';

const VERIFY_PAGE = 2000;

/** What the query API reads of an entry: every stored column. */
const ENTRY_COLUMNS = auditSelectList(ALL_AUDIT_FIELDS);

/** An admin change for the trail: who (the principal), what, and previous and new values. */
export interface AdminChange {
  action: string;
  agentId?: string | null;
  agentName?: string | null;
  reason?: string;
  details: Record<string, unknown>;
}

/** Reads of the audit trail: pages, statistics, chain verification; and admin-change events. */
@Injectable()
export class AuditService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly writer: AuditWriter,
  ) {}

  /** Records an admin change in the same trail (and hash chain) as decisions. */
  recordAdminEvent(principal: AdminPrincipal | { orgId: string; tokenId: 'cli' | 'system' }, change: AdminChange): void {
    // Read at once: the details may hold live values (an entity's tags) that change later.
    this.writer.recordNow({
      ts: Date.now(),
      orgId: principal.orgId,
      source: 'admin',
      kind: 'admin',
      traceId: null,
      agentId: change.agentId ?? null,
      agentName: change.agentName ?? null,
      trustTier: null,
      action: `admin:${change.action}`,
      method: null,
      path: null,
      decision: 'allow',
      enforced: true,
      rateLimited: false,
      policyName: null,
      rule: null,
      reason: change.reason ?? null,
      decisionLatencyMs: null,
      latencyMs: null,
      status: null,
      upstreamStatus: null,
      delegationChain: null,
      input: null,
      details: { actor: principal.tokenId, ...change.details },
    });
  }

  /** A page of entries, newest first. */
  async list(principal: AdminPrincipal, query: AuditQueryDto): Promise<AuditPage> {
    refuseReversedRange(query.from, query.to);
    const limit = query.limit ?? 50;
    const where = ['org_id = $1'];
    const params: unknown[] = [principal.orgId];
    const add = (clause: string, value: unknown) => {
      params.push(value);
      where.push(clause.replace('?', `$${params.length}`));
    };
    if (query.decision) add('decision = ?', query.decision);
    if (query.from) add('ts >= ?', new Date(query.from));
    if (query.to) add('ts < ?', new Date(query.to));
    if (query.agentId) add('agent_id = ?', query.agentId);
    if (query.action) add(`action LIKE ? ESCAPE '\\'`, `${query.action.replace(/[\\%_]/g, '\\$&')}%`);
    if (query.source) add('source = ?', query.source);
    if (query.cursor) {
      const [ts, id] = decodeCursor(query.cursor);
      params.push(ts, id);
      where.push(`(ts, id) < ($${params.length - 1}, $${params.length})`);
    }
    params.push(limit + 1);
    const rows: Array<Record<string, unknown>> = await this.dataSource.query(
      `SELECT ${ENTRY_COLUMNS} FROM audit_entries WHERE ${where.join(' AND ')} ORDER BY ts DESC, id DESC LIMIT $${params.length}`,
      params,
    );
    const page = rows.slice(0, limit).map((row) => readAudit(row, ALL_AUDIT_FIELDS));
    const last = page[page.length - 1];
    return { entries: page.map(toView), nextCursor: rows.length > limit && last ? encodeCursor(new Date(last.ts), last.id) : null };
  }

  /**
   * Recomputes the organization's hash chain and reports the first broken link: an edited row
   * (hash), a removed or reordered row (sequence gap, previous hash), or rows removed from the
   * end (chain head). The chain is checked from just after what retention pruned (whose last
   * hash the head keeps), so pruning is not tampering but a deleted oldest entry is. With
   * `from`/`to`, only the entries of that time range are walked.
   */
  async verify(principal: AdminPrincipal, from?: string, to?: string): Promise<AuditVerification> {
    refuseReversedRange(from, to);
    const head = await this.chainHead(principal.orgId);
    if (head === null) return result(0, null, null, null);
    const range = await this.seqRange(principal.orgId, head, from, to);
    if (range === null) return result(0, null, null, null);
    const { first, last } = range;
    let expectedSeq = first;
    // The predecessor's hash is known when the walk starts right after the pruning mark.
    let previousHash: string | null = first === head.prunedSeq + 1 ? head.prunedHash : null;
    let previousId: string | null = null;
    let checked = 0;
    for (let skip = 0; ; skip = 1) {
      // Each page after the first starts again at the last entry checked (skipped), so a second
      // entry under that number, which the page limit may have cut off, is still read.
      const rows: Array<Record<string, unknown>> = await this.dataSource.query(
        `SELECT ${ENTRY_COLUMNS} FROM audit_entries WHERE org_id = $1 AND seq >= $2 AND seq <= $3 ORDER BY seq, id LIMIT $4`,
        [principal.orgId, expectedSeq - skip, last, VERIFY_PAGE],
      );
      if (rows.length <= skip) break;
      for (const row of rows.slice(skip)) {
        const entry = readAudit(row, ALL_AUDIT_FIELDS);
        const problem = checkLink(entry, expectedSeq, previousHash, previousId);
        if (problem) return result(checked, first, last, problem);
        previousHash = entry.hash;
        previousId = entry.id;
        expectedSeq = entry.seq + 1;
        checked++;
      }
    }
    if (expectedSeq <= last) {
      const atEnd = last === head.seq;
      const message = `entries ${expectedSeq} to ${last}${atEnd ? ', the end of the chain,' : ''} are missing`;
      return result(checked, first, last, breakAt(expectedSeq, null, atEnd ? 'head_mismatch' : 'missing_entries', message));
    }
    if (last === head.seq && previousHash !== head.hash) {
      return result(checked, first, last, breakAt(head.seq, null, 'head_mismatch', `entry ${head.seq} does not match the chain head`));
    }
    return result(checked, first, last, null);
  }

  /** Sequence numbers to walk: the whole kept chain, or the entries in [from, to) (through the head when `to` is open). */
  private async seqRange(orgId: string, head: ChainHeadRow, from?: string, to?: string): Promise<{ first: number; last: number } | null> {
    if (from === undefined && to === undefined) return head.prunedSeq < head.seq ? { first: head.prunedSeq + 1, last: head.seq } : null;
    const rows: Array<{ first: string | null; last: string | null }> = await this.dataSource.query(
      `SELECT min(seq) AS first, max(seq) AS last FROM audit_entries
       WHERE org_id = $1 AND seq > $2 AND ($3::timestamptz IS NULL OR ts >= $3) AND ($4::timestamptz IS NULL OR ts < $4)`,
      [orgId, head.prunedSeq, from ? new Date(from) : null, to ? new Date(to) : null],
    );
    if (rows[0].first === null || rows[0].last === null) return null;
    return { first: Number(rows[0].first), last: to === undefined ? head.seq : Number(rows[0].last) };
  }

  private async chainHead(orgId: string): Promise<ChainHeadRow | null> {
    const rows: Array<{ seq: string; hash: string; pruned_seq: string; pruned_hash: string }> = await this.dataSource.query(
      'SELECT seq, hash, pruned_seq, pruned_hash FROM audit_chain_heads WHERE org_id = $1',
      [orgId],
    );
    if (rows.length === 0) return null;
    const row = rows[0];
    return { seq: Number(row.seq), hash: row.hash, prunedSeq: Number(row.pruned_seq), prunedHash: row.pruned_hash };
  }
}

interface ChainHeadRow {
  seq: number;
  hash: string;
  /** Last sequence number removed by retention (0: none), and that entry's hash. */
  prunedSeq: number;
  prunedHash: string;
}

function checkLink(entry: ChainedAudit, expectedSeq: number, previousHash: string | null, previousId: string | null): ChainBreak | null {
  const { seq, id } = entry;
  // Entries come in sequence order, so a number below the expected one is the previous entry's.
  if (seq < expectedSeq) return breakAt(seq, id, 'duplicate_entry', `entry ${id} has number ${seq}, which entry ${previousId} already has`);
  if (seq !== expectedSeq) return breakAt(expectedSeq, null, 'missing_entries', `entries ${expectedSeq} to ${seq - 1} are missing`);
  if (previousHash !== null && entry.prevHash !== previousHash) {
    return breakAt(seq, id, 'prev_hash_mismatch', `entry ${seq} does not follow entry ${seq - 1}`);
  }
  if (chainHash(entry.prevHash, entry) !== entry.hash) {
    return breakAt(seq, id, 'hash_mismatch', `entry ${seq} was modified after it was written`);
  }
  return null;
}

function breakAt(seq: number, id: string | null, problem: string, message: string): ChainBreak {
  return { seq, id, problem, message };
}

function result(checked: number, firstSeq: number | null, lastSeq: number | null, brokenAt: ChainBreak | null): AuditVerification {
  return { ok: brokenAt === null, checked, firstSeq, lastSeq, brokenAt };
}

function toView(entry: ChainedAudit): AuditEntryView {
  const { orgId, agentId, agentName, trustTier, action } = entry;
  return {
    id: entry.id,
    timestamp: new Date(entry.ts).toISOString(),
    seq: entry.seq,
    source: entry.source,
    kind: entry.kind,
    traceId: entry.traceId,
    agentId,
    agentName,
    trustTier,
    action,
    method: entry.method,
    path: entry.path,
    decision: entry.decision,
    enforced: entry.enforced,
    rateLimited: entry.rateLimited,
    policyName: entry.policyName,
    rule: entry.rule,
    reason: entry.reason,
    latencyMs: entry.latencyMs,
    decisionLatencyMs: entry.decisionLatencyMs,
    status: entry.status,
    upstreamStatus: entry.upstreamStatus,
    delegationChain: parsePayload(entry.delegationChain) as string[] | null,
    input: expandInput(parsePayload(entry.input), { orgId, agentId, agentName, trustTier, action }),
    details: parsePayload(entry.details),
  };
}

function parsePayload(text: string | null): unknown {
  return text === null ? null : JSON.parse(text);
}

function encodeCursor(ts: Date, id: string): string {
  return Buffer.from(`${ts.toISOString()}|${id}`).toString('base64url');
}

function decodeCursor(cursor: string): [Date, string] {
  const [ts, id] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  const date = new Date(ts ?? '');
  if (!id || Number.isNaN(date.getTime())) throw AppError.invalid('cursor must be a nextCursor value returned by this endpoint');
  return [date, id];
}

/** `from` after `to` is a mistake in the query: answered as nothing found, it read as an empty or verified trail. */
function refuseReversedRange(from: string | undefined, to: string | undefined): void {
  if (from === undefined || to === undefined || new Date(from).getTime() <= new Date(to).getTime()) return;
  throw AppError.invalid(`from (${from}) is later than to (${to})`);
}

import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import type { Logger } from 'pino';
import { DataSource, EntityManager, Repository } from 'typeorm';
import type { AuditRecord } from '../../core/audit-record/audit-record';
import { AuditWriter } from '../audit/audit-writer';
import type { AdminPrincipal } from '../common/admin-principal';
import { DecisionEvents } from '../../core/decision/decision-events';
import { DecisionMemory } from '../../core/decision/decision-memory';
import { POLICY_SOURCE, PolicySource } from '../../core/decision/decision-sources';
import { DecisionDetails, ingestedDetails } from '../../core/decision/decision-details';
import { forwardedCachedDetails } from '../../core/pdp/outcome-record';
import type { Decision } from '../../core/policy-engine/types';
import { LOGGER } from '../../core/logging/logging.module';
import { SIDECAR_ID_FORMAT } from '../../core/edge-protocol/sidecar-protocol';
import { AuditIngestDto, AuditIngestResult, IngestedEntryDto, SIDECAR_MODES, SidecarView } from './bundles.dto';
import { SidecarAuditRange } from './sidecar-audit-range.entity';
import { Sidecar } from './sidecar.entity';
import { covers, gapsOf, mergeRanges, rangesOf, SequenceRange } from './sequence-ranges';

/** What a sidecar said about itself on a bundle fetch. */
export interface SidecarSync {
  id: string | undefined;
  mode: string | undefined;
  /** The highest audit sequence number it has used, as its header gave it. */
  auditSeq: string | undefined;
  /** Its labels, as X-Sidecar-Labels gave them (already checked). */
  labels: Readonly<Record<string, string>>;
  bundleVersion: string;
}

/** Digits only, at most 15 of them: a safe integer. */
const SEQ_TEXT = /^\d{1,15}$/;

/**
 * The fleet of edge sidecars: who synced which bundle when, and their buffered audit entries.
 * Ingestion is idempotent by (sidecar, sequence number): numbers already received are skipped,
 * new entries go into the organization's hash chain as `source: sidecar` (AuditWriter.writeOnce)
 * and, once written, out on DecisionEvents (alerting), and only then are their numbers recorded.
 * The write itself leaves out entries already in the trail (by id and time, under the chain
 * head's lock), so a retry that reaches another gateway instance while the first attempt is still
 * writing, or one after a crash between the write and the recording of the numbers, writes and
 * alerts nothing twice.
 */
@Injectable()
export class SidecarsService {
  /** One ingestion at a time per sidecar on this instance. */
  private readonly inFlight = new Map<string, Promise<unknown>>();

  constructor(
    @InjectRepository(Sidecar) private readonly sidecars: Repository<Sidecar>,
    @InjectRepository(SidecarAuditRange) private readonly ranges: Repository<SidecarAuditRange>,
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly writer: AuditWriter,
    private readonly events: DecisionEvents,
    private readonly memory: DecisionMemory,
    @Inject(POLICY_SOURCE) private readonly policies: PolicySource,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** Records a bundle fetch by a sidecar that named itself (others are not tracked). */
  async recordSync(admin: AdminPrincipal, sync: SidecarSync): Promise<void> {
    if (sync.id === undefined || !SIDECAR_ID_FORMAT.test(sync.id)) return;
    const mode = (SIDECAR_MODES as readonly string[]).includes(sync.mode ?? '') ? sync.mode! : null;
    const reportedSeq = sync.auditSeq !== undefined && SEQ_TEXT.test(sync.auditSeq) ? Number(sync.auditSeq) : null;
    const labels = Object.keys(sync.labels).length === 0 ? null : { ...sync.labels };
    await this.sidecars.upsert({ orgId: admin.orgId, id: sync.id, mode, labels, bundleVersion: sync.bundleVersion, lastSyncAt: new Date(), reportedSeq }, ['orgId', 'id']);
  }

  /** Writes a batch of buffered entries once each. */
  ingest(admin: AdminPrincipal, dto: AuditIngestDto): Promise<AuditIngestResult> {
    const key = `${admin.orgId}\u0000${dto.sidecarId}`;
    const previous = this.inFlight.get(key) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(() => this.ingestNow(admin, dto));
    this.inFlight.set(key, next);
    void next.finally(() => {
      if (this.inFlight.get(key) === next) this.inFlight.delete(key);
    }).catch(() => undefined);
    return next;
  }

  /** Every sidecar of the organization with its sequence state. */
  async list(admin: AdminPrincipal): Promise<SidecarView[]> {
    const [sidecars, ranges] = await Promise.all([
      this.sidecars.find({ where: { orgId: admin.orgId }, order: { id: 'ASC' } }),
      this.ranges.find({ where: { orgId: admin.orgId } }),
    ]);
    return sidecars.map((sidecar) => toView(sidecar, ranges.filter((range) => range.sidecarId === sidecar.id)));
  }

  private async ingestNow(admin: AdminPrincipal, dto: AuditIngestDto): Promise<AuditIngestResult> {
    await this.sidecars.createQueryBuilder().insert().values({ orgId: admin.orgId, id: dto.sidecarId }).orIgnore().execute();
    const received = mergeRanges((await this.ranges.find({ where: { orgId: admin.orgId, sidecarId: dto.sidecarId } })).map(toRange));
    const unique = firstOfEachSeq(dto.entries);
    const foreign = await this.foreignAgents(admin.orgId, unique);
    const ours = foreign.size === 0 ? unique : unique.filter((entry) => !foreign.has(entry.agentId!));
    const refused = unique.length - ours.length;
    const fresh = ours.filter((entry) => !covers(received, entry.seq));
    const reused = await this.renumberedOf(admin.orgId, ours.filter((entry) => covers(received, entry.seq)));
    if (refused > 0) this.reportForeign(admin.orgId, dto.sidecarId, refused, foreign);
    const toWrite: IngestedEntryDto[] = [];
    for (const entry of [...fresh, ...reused]) if (await this.claimOutcome(admin.orgId, entry)) toWrite.push(entry);
    const written = await this.writeAndEmit(admin.orgId, toWrite);
    const renumbered = reused.filter((entry) => written.has(entry.id));
    if (renumbered.length > 0) this.reportRenumbered(admin.orgId, dto.sidecarId, renumbered);
    const all = await this.saveRanges(admin.orgId, dto.sidecarId, fresh.map((entry) => entry.seq), renumbered.length);
    return { accepted: written.size, duplicates: dto.entries.length - written.size - refused, renumbered: renumbered.length, refused, lastSeq: all.at(-1)?.last ?? 0 };
  }

  /**
   * Writes the entries the trail does not hold yet and emits the decisions among them; resolves
   * to their ids. Emitted only once written, and only by the attempt that wrote them: another
   * attempt at the same batch (a retry on another instance) raises no alert a second time.
   */
  private async writeAndEmit(orgId: string, entries: IngestedEntryDto[]): Promise<Set<string>> {
    const records = entries.map((entry) => toRecord(orgId, entry));
    const written = await this.writer.writeOnce(records);
    for (const record of records) {
      // A cached decision's entry is an application of a decision already made, at the edge or at
      // the gateway alike: its alerts fired with that decision (OutcomeRecorder emits none either).
      if (record.kind === 'decision' && written.has(record.id) && !isCachedDecision(record)) this.events.emit({ entry: record, decision: ingestedDecision(record), ingested: true });
    }
    await this.rememberEdgeCalls(orgId, records.filter((record) => written.has(record.id)));
    return written;
  }

  /**
   * The calls the sidecar let through in a session, in its order, remembered in the gateway's
   * session memory too (docs/sidecar.md "Sessions and budgets"): labels added at the edge hold
   * at the gateway. Only entries naming a session cost anything.
   */
  private async rememberEdgeCalls(orgId: string, records: readonly AuditRecord[]): Promise<void> {
    const calls = records.filter((record) => record.kind === 'decision' && record.agentId !== null && (record.decision === 'allow' || !record.enforced) && (record.details as DecisionDetails | null)?.session !== undefined);
    if (calls.length === 0) return;
    const { set } = await this.policies.get(orgId);
    const nowMs = Date.now();
    for (const call of calls) {
      const session = (call.details as DecisionDetails).session!;
      await this.memory.rememberEdgeCall(set, { orgId, agentId: call.agentId! }, session.id, call.action, session.labelsAdded ?? [], call.ts, nowMs);
    }
  }

  /**
   * Of entries under numbers already received, those not in the trail: a resend carries the same
   * id, a sidecar that lost its numbering (CACHE_DIR wiped) another. Skipping those as
   * duplicates would lose decisions without a gap to show for it. (A first look, to spare the
   * write of a plain resend; the write checks again.)
   */
  private async renumberedOf(orgId: string, seen: IngestedEntryDto[]): Promise<IngestedEntryDto[]> {
    const inTrail = await this.alreadyWritten(orgId, seen);
    return seen.filter((entry) => !inTrail.has(entry.id));
  }

  /**
   * Agents of the batch that belong to another organization: a sidecar restarted with another
   * organization's ADMIN_TOKEN forwards what it decided for the previous one, which must not
   * enter this organization's hash chain. Their numbers are not recorded, so they show as a gap.
   */
  private async foreignAgents(orgId: string, entries: IngestedEntryDto[]): Promise<Set<string>> {
    const agentIds = [...new Set(entries.map((entry) => entry.agentId).filter((id): id is string => typeof id === 'string'))];
    if (agentIds.length === 0) return new Set();
    const rows: Array<{ id: string }> = await this.dataSource.query('SELECT id FROM agents WHERE id = ANY($1) AND org_id <> $2', [agentIds, orgId]);
    return new Set(rows.map((row) => row.id));
  }

  private reportForeign(orgId: string, sidecarId: string, entries: number, agents: Set<string>): void {
    this.logger.warn(
      { orgId, sidecarId, entries, agents: [...agents] },
      "sidecar sent entries of agents of another organization (restarted with another organization's ADMIN_TOKEN?): refused, their numbers show as a gap",
    );
  }

  private reportRenumbered(orgId: string, sidecarId: string, entries: IngestedEntryDto[]): void {
    this.logger.warn(
      { orgId, sidecarId, entries: entries.length, seqs: rangesOf(entries.map((entry) => entry.seq).sort((a, b) => a - b)) },
      'sidecar sent entries under numbers it had already sent, with other ids (did it lose its CACHE_DIR?): written to the trail, counted as renumbered',
    );
  }

  /**
   * An adapter outcome with an eventId is recorded once per organization, at the edge as on the
   * gateway (the same ledger as /v1/audit); false when it was recorded before.
   */
  private async claimOutcome(orgId: string, entry: IngestedEntryDto): Promise<boolean> {
    const eventId = entry.kind === 'outcome' ? (entry.details as { eventId?: unknown } | null | undefined)?.eventId : undefined;
    if (typeof eventId !== 'string') return true;
    const rows: unknown[] = await this.dataSource.query(
      'INSERT INTO adapter_audit_events (org_id, event_id, audit_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING event_id',
      [orgId, eventId, entry.id],
    );
    if (rows.length === 1) return true;
    // Claimed by this very entry in an attempt that failed before writing it: write it now.
    const claimed: Array<{ audit_id: string }> = await this.dataSource.query('SELECT audit_id FROM adapter_audit_events WHERE org_id = $1 AND event_id = $2', [orgId, eventId]);
    return claimed[0]?.audit_id === entry.id;
  }

  /** Ids of these entries that are in the trail. */
  private async alreadyWritten(orgId: string, entries: IngestedEntryDto[]): Promise<Set<string>> {
    if (entries.length === 0) return new Set();
    const rows: Array<{ id: string }> = await this.dataSource.query(
      'SELECT id FROM audit_entries WHERE org_id = $1 AND id = ANY($2) AND ts = ANY($3::timestamptz[])',
      [orgId, entries.map((entry) => entry.id), [...new Set(entries.map((entry) => new Date(entry.ts).toISOString()))]],
    );
    return new Set(rows.map((row) => row.id));
  }

  /**
   * Adds `seqs` to the sidecar's received numbers; resolves to them all. The ranges are read
   * again with the sidecar's row locked: another gateway instance may have recorded numbers of
   * this sidecar since this ingestion first read them (a resend it answered first), and merging
   * into that first read would drop them, or insert a range it had just inserted (a 409).
   */
  private saveRanges(orgId: string, sidecarId: string, seqs: number[], renumbered: number): Promise<SequenceRange[]> {
    return this.dataSource.transaction(async (manager) => {
      const before = await lockedRanges(manager, orgId, sidecarId);
      const after = mergeRanges([...before, ...rangesOf([...seqs].sort((a, b) => a - b))]);
      if (renumbered > 0) await manager.increment(Sidecar, { orgId, id: sidecarId }, 'renumbered', renumbered);
      if (!sameRanges(before, after)) {
        await manager.delete(SidecarAuditRange, { orgId, sidecarId });
        await manager.insert(
          SidecarAuditRange,
          after.map((range) => ({ orgId, sidecarId, firstSeq: range.first, lastSeq: range.last })),
        );
      }
      await manager.update(Sidecar, { orgId, id: sidecarId }, { lastIngestAt: new Date() });
      return after;
    });
  }
}

/** The sidecar's received numbers, read with its row locked until the transaction ends (one round trip). */
async function lockedRanges(manager: EntityManager, orgId: string, sidecarId: string): Promise<SequenceRange[]> {
  const rows: Array<{ first_seq: string | null; last_seq: string | null }> = await manager.query(
    `SELECT r.first_seq, r.last_seq FROM sidecars s
     LEFT JOIN sidecar_audit_ranges r ON r.org_id = s.org_id AND r.sidecar_id = s.id
     WHERE s.org_id = $1 AND s.id = $2 FOR UPDATE OF s`,
    [orgId, sidecarId],
  );
  return mergeRanges(rows.filter((row) => row.first_seq !== null).map((row) => ({ first: Number(row.first_seq), last: Number(row.last_seq) })));
}

function toRange(row: SidecarAuditRange): SequenceRange {
  return { first: row.firstSeq, last: row.lastSeq };
}

function sameRanges(a: SequenceRange[], b: SequenceRange[]): boolean {
  return a.length === b.length && a.every((range, index) => range.first === b[index].first && range.last === b[index].last);
}

/** A batch that repeats a number keeps its first entry. */
function firstOfEachSeq(entries: IngestedEntryDto[]): IngestedEntryDto[] {
  const seen = new Set<number>();
  return entries.filter((entry) => !seen.has(entry.seq) && seen.add(entry.seq) !== undefined);
}

function toRecord(orgId: string, entry: IngestedEntryDto): AuditRecord & { id: string } {
  return {
    id: entry.id,
    ts: entry.ts,
    orgId,
    source: 'sidecar',
    kind: entry.kind ?? 'decision',
    traceId: entry.traceId ?? null,
    agentId: entry.agentId ?? null,
    agentName: entry.agentName ?? null,
    trustTier: entry.trustTier ?? null,
    action: entry.action,
    method: entry.method ?? null,
    path: entry.path ?? null,
    decision: entry.decision,
    enforced: entry.enforced,
    rateLimited: entry.rateLimited,
    policyName: entry.policyName ?? null,
    rule: entry.rule ?? null,
    reason: entry.reason ?? null,
    decisionLatencyMs: entry.decisionLatencyMs ?? null,
    latencyMs: entry.latencyMs ?? null,
    status: entry.status ?? null,
    upstreamStatus: entry.upstreamStatus ?? null,
    delegationChain: entry.delegationChain ?? null,
    input: entry.input ?? null,
    details: entry.kind === 'outcome' ? (entry.details ?? null) : (forwardedCachedDetails(entry.details) ?? ingestedDetails(entry.details)),
  };
}

function isCachedDecision(record: AuditRecord): boolean {
  return (record.details as { cached?: unknown } | null)?.cached === true;
}

/** The decision an ingested entry records, for the per-decision event (alerts, analytics); its details are already ingestedDetails's. */
function ingestedDecision(record: AuditRecord): Decision {
  // The details name only the alerts and limit there are (decisionDetails): absent keys stay absent.
  return { effect: record.decision, policy: record.policyName ?? 'default', rule: record.rule, reason: record.reason ?? '', ...(record.details as DecisionDetails | null) };
}

function toView(sidecar: Sidecar, rows: SidecarAuditRange[]): SidecarView {
  const merged = mergeRanges(rows.map(toRange));
  const lastSeq = merged.at(-1)?.last ?? 0;
  return {
    id: sidecar.id,
    mode: sidecar.mode,
    labels: sidecar.labels ?? {},
    bundleVersion: sidecar.bundleVersion,
    lastSync: sidecar.lastSyncAt?.toISOString() ?? null,
    lastIngest: sidecar.lastIngestAt?.toISOString() ?? null,
    lastSeq,
    // Numbers it had used at its last fetch beyond those received: still in its buffer, or refused by the ingest (its /health says which).
    unforwarded: Math.max(0, (sidecar.reportedSeq ?? 0) - lastSeq),
    received: merged.reduce((sum, range) => sum + range.last - range.first + 1, 0),
    renumbered: sidecar.renumbered,
    gaps: gapsOf(merged).map((gap) => ({
      first: gap.first,
      last: gap.last,
      message: `sidecar ${sidecar.id} is missing ${gap.first === gap.last ? gap.first : `${gap.first}-${gap.last}`}`,
    })),
  };
}

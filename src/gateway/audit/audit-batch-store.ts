import { GENESIS_HASH } from './audit-chain';
import { COPY_AUDIT_ROWS_SQL, copyText, copyValue, INSERT_AUDIT_ROWS_SQL, jsonRow } from '../../core/audit-record/audit-entry';
import { createDayPartition, dayStart } from './audit-days';
import { QueuedAudit, QueuedParts, queuedParts } from '../../core/audit-record/audit-record';
import { BatchRollups, rolledDecision } from './audit-rollups';
import { ChainHead, chainRow, copyLine } from './audit-rows';
import type { SqlClient } from './sql-client';

/** Entries built between two yields to the event loop, so a big batch never stalls it for long. */
const BUILD_SLICE = 100;

/**
 * Writes one batch of audit records: creates missing day partitions, then in one transaction
 * locks the chain heads of the batch's organizations (in org_id order), builds and hashes the
 * rows in batch order, writes them with one COPY (or, where the connection cannot COPY, one
 * INSERT), adds the batch's decisions to the analytics rollups (see BatchRollups) and moves the
 * heads. Plain code with no Nest: it runs in the gateway's thread
 * (embedded database) or in the audit worker.
 *
 * A batch written `once` (a sidecar's entries, which a resend may bring to several instances at
 * the same time) leaves out the entries the trail already holds, looked up by organization, time
 * and id once the heads are locked: every write of an organization's entries, on any instance,
 * holds its head until it commits, so no other write of them can be under way or uncommitted.
 */
export class AuditBatchStore {
  private readonly knownDays = new Set<number>();
  /** Organizations whose chain head row this store has seen: their heads need no insert first. */
  private readonly knownHeads = new Set<string>();

  /**
   * Writes the batch, or throws leaving nothing written; resolves to the ids of the entries left
   * out as already in the trail (only with `once`). `stripPayloads`: store it without input and
   * details.
   */
  async write(client: SqlClient, batch: readonly QueuedAudit[], stripPayloads: boolean, once = false): Promise<string[]> {
    const entries = batch.map(queuedParts);
    try {
      await this.ensurePartitions(client, entries);
      return await client.transaction((tx) => this.insert(tx, entries, stripPayloads, once));
    } catch (error) {
      // A day dropped by retention (or by hand) must be created again on the retry.
      this.knownDays.clear();
      throw error;
    }
  }

  private async ensurePartitions(client: SqlClient, entries: readonly QueuedParts[]): Promise<void> {
    for (const entry of entries) {
      const day = dayStart(entry.ts);
      if (this.knownDays.has(day)) continue;
      await createDayPartition(client, day);
      this.knownDays.add(day);
    }
  }

  private async insert(client: SqlClient, batch: readonly QueuedParts[], stripPayloads: boolean, once: boolean): Promise<string[]> {
    const heads = await this.lockHeads(client, [...new Set(batch.map((entry) => entry.orgIdText))]);
    const present = once ? await presentEntries(client, batch) : NONE_PRESENT;
    const entries = present.size === 0 ? batch : batch.filter((entry) => !present.has(entryKey(entry)));
    if (entries.length > 0) await this.insertRows(client, entries, heads, stripPayloads);
    return batch.filter((entry) => present.has(entryKey(entry))).map((entry) => entry.id);
  }

  /** Numbers, hashes and writes `entries` after `heads` (locked), adds them to the rollups and moves the heads. */
  private async insertRows(client: SqlClient, entries: readonly QueuedParts[], heads: Map<string, OrgHead>, stripPayloads: boolean): Promise<void> {
    const render = client.copyFrom ? copyLine : jsonRow;
    const rows: string[] = [];
    const rollups = new BatchRollups();
    for (let i = 0; i < entries.length; i++) {
      if (i > 0 && i % BUILD_SLICE === 0) await yieldToEventLoop();
      const entry = entries[i];
      rows.push(render(chainRow(entry, heads.get(entry.orgIdText)!, stripPayloads)));
      const decision = rolledDecision(entry.orgIdText, entry.ts, entry.content);
      if (decision !== null) rollups.add(decision);
    }
    if (client.copyFrom) await client.copyFrom(COPY_AUDIT_ROWS_SQL, rows.join(''));
    else await client.query(INSERT_AUDIT_ROWS_SQL, [`[${rows.join(',')}]`]);
    await rollups.write(client);
    const moved = [...heads.values()];
    await client.query(
      `INSERT INTO audit_chain_heads (org_id, seq, hash, updated_at)
       SELECT * , now() FROM unnest($1::text[], $2::bigint[], $3::text[])
       ON CONFLICT (org_id) DO UPDATE SET seq = EXCLUDED.seq, hash = EXCLUDED.hash, updated_at = now()`,
      [moved.map((head) => head.orgId), moved.map((head) => head.seq), moved.map((head) => head.hash)],
    );
  }

  /**
   * Current chain heads of these organizations, locked until the transaction ends. The ids are
   * given, and the heads keyed, in COPY text format, as the queued records hold them. A head
   * row is created first for an organization not seen before (one round trip fewer per batch
   * in the usual case), and for one whose row has gone.
   */
  private async lockHeads(client: SqlClient, orgIdTexts: string[]): Promise<Map<string, OrgHead>> {
    const orgIds = orgIdTexts.map((text) => copyValue(text)!);
    if (orgIds.some((orgId) => !this.knownHeads.has(orgId))) await createHeads(client, orgIds);
    let heads = await selectHeadsForUpdate(client, orgIds);
    if (heads.size < orgIds.length) {
      await createHeads(client, orgIds);
      heads = await selectHeadsForUpdate(client, orgIds);
    }
    for (const orgId of orgIds) this.knownHeads.add(orgId);
    return heads;
  }
}

interface OrgHead extends ChainHead {
  orgId: string;
}

const NONE_PRESENT: ReadonlySet<string> = new Set();

/** An entry's place in the trail: organization (in COPY text format), time and id. */
function entryKey(entry: Pick<QueuedParts, 'orgIdText' | 'ts' | 'id'>): string {
  return `${entry.orgIdText}\t${entry.ts}\t${entry.id}`;
}

/** Keys (`entryKey`) of the entries of `entries` the trail already holds. */
async function presentEntries(client: SqlClient, entries: readonly QueuedParts[]): Promise<Set<string>> {
  const rows = await client.query<{ org_id: string; ts: Date | string; id: string }>(
    'SELECT org_id, ts, id FROM audit_entries WHERE org_id = ANY($1::text[]) AND ts = ANY($2::timestamptz[]) AND id = ANY($3::text[])',
    [
      [...new Set(entries.map((entry) => copyValue(entry.orgIdText)!))],
      [...new Set(entries.map((entry) => new Date(entry.ts).toISOString()))],
      entries.map((entry) => entry.id),
    ],
  );
  return new Set(rows.map((row) => entryKey({ orgIdText: copyText(row.org_id), ts: new Date(row.ts).getTime(), id: row.id })));
}

async function createHeads(client: SqlClient, orgIds: string[]): Promise<void> {
  await client.query(`INSERT INTO audit_chain_heads (org_id, seq, hash) SELECT unnest($1::text[]), 0, $2 ON CONFLICT (org_id) DO NOTHING`, [orgIds, GENESIS_HASH]);
}

async function selectHeadsForUpdate(client: SqlClient, orgIds: string[]): Promise<Map<string, OrgHead>> {
  const rows = await client.query<{ org_id: string; seq: string; hash: string }>(
    'SELECT org_id, seq, hash FROM audit_chain_heads WHERE org_id = ANY($1::text[]) ORDER BY org_id FOR UPDATE',
    [orgIds],
  );
  return new Map(rows.map((row) => [copyText(row.org_id), { orgId: row.org_id, seq: Number(row.seq), hash: row.hash }]));
}

function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

import { GENESIS_HASH } from './audit-chain';
import { createDayPartition, dayStart } from './audit-partitions';
import type { QueuedAudit } from './audit-record';
import { ChainHead, chainRow, COPY_AUDIT_ROWS_SQL, copyLine, INSERT_AUDIT_ROWS_SQL, jsonRow } from './audit-rows';
import type { SqlClient } from './sql-client';

/** Entries built between two yields to the event loop, so a big batch never stalls it for long. */
const BUILD_SLICE = 100;

/**
 * Writes one batch of audit records: creates missing day partitions, then in one transaction
 * locks the chain heads of the batch's organizations (in org_id order), builds and hashes the
 * rows in batch order, writes them with one COPY (or, where the connection cannot COPY, one
 * INSERT) and moves the heads. Plain code with no Nest: it runs in the gateway's thread
 * (embedded database) or in the audit worker.
 */
export class AuditBatchStore {
  private readonly knownDays = new Set<number>();

  /** Writes the batch, or throws leaving nothing written. `stripPayloads`: store it without input and details. */
  async write(client: SqlClient, batch: readonly QueuedAudit[], stripPayloads: boolean): Promise<void> {
    try {
      await this.ensurePartitions(client, batch);
      await client.transaction((tx) => this.insert(tx, batch, stripPayloads));
    } catch (error) {
      // A day dropped by retention (or by hand) must be created again on the retry.
      this.knownDays.clear();
      throw error;
    }
  }

  private async ensurePartitions(client: SqlClient, batch: readonly QueuedAudit[]): Promise<void> {
    for (const entry of batch) {
      const day = dayStart(entry.ts);
      if (this.knownDays.has(day)) continue;
      await createDayPartition(client, day);
      this.knownDays.add(day);
    }
  }

  private async insert(client: SqlClient, batch: readonly QueuedAudit[], stripPayloads: boolean): Promise<void> {
    const heads = await lockHeads(client, [...new Set(batch.map((entry) => entry.orgId))]);
    const render = client.copyFrom ? copyLine : jsonRow;
    const rows: string[] = [];
    for (let i = 0; i < batch.length; i++) {
      if (i > 0 && i % BUILD_SLICE === 0) await yieldToEventLoop();
      rows.push(render(chainRow(batch[i], heads.get(batch[i].orgId)!, stripPayloads)));
    }
    if (client.copyFrom) await client.copyFrom(COPY_AUDIT_ROWS_SQL, rows.join(''));
    else await client.query(INSERT_AUDIT_ROWS_SQL, [`[${rows.join(',')}]`]);
    const orgIds = [...heads.keys()];
    await client.query(
      `INSERT INTO audit_chain_heads (org_id, seq, hash, updated_at)
       SELECT * , now() FROM unnest($1::text[], $2::bigint[], $3::text[])
       ON CONFLICT (org_id) DO UPDATE SET seq = EXCLUDED.seq, hash = EXCLUDED.hash, updated_at = now()`,
      [orgIds, orgIds.map((id) => heads.get(id)!.seq), orgIds.map((id) => heads.get(id)!.hash)],
    );
  }
}

/** Current chain heads of these organizations, locked until the transaction ends. */
async function lockHeads(client: SqlClient, orgIds: string[]): Promise<Map<string, ChainHead>> {
  await client.query(`INSERT INTO audit_chain_heads (org_id, seq, hash) SELECT unnest($1::text[]), 0, $2 ON CONFLICT (org_id) DO NOTHING`, [
    orgIds,
    GENESIS_HASH,
  ]);
  const rows = await client.query<{ org_id: string; seq: string; hash: string }>(
    'SELECT org_id, seq, hash FROM audit_chain_heads WHERE org_id = ANY($1::text[]) ORDER BY org_id FOR UPDATE',
    [orgIds],
  );
  return new Map(rows.map((row) => [row.org_id, { seq: Number(row.seq), hash: row.hash }]));
}

function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import type { AuditRecord } from '../audit/audit-record';
import { AuditSanitizer } from '../audit/audit-sanitizer';
import { AuditWal, WalBatch } from './audit-wal';

const logger = pino({ level: 'silent' });
const clean = new AuditSanitizer(['password']);

function record(action: string): AuditRecord {
  return {
    id: `aud_${action.replace(/\W/g, '')}`,
    ts: 1_764_000_000_000,
    orgId: 'org_a',
    source: 'sidecar',
    kind: 'decision',
    traceId: 't',
    agentId: 'agent_1',
    agentName: 'one',
    trustTier: 'verified',
    action,
    method: null,
    path: null,
    decision: 'allow',
    enforced: true,
    rateLimited: false,
    policyName: 'default',
    rule: null,
    reason: null,
    decisionLatencyMs: 0.01,
    latencyMs: 0.1,
    status: 200,
    upstreamStatus: null,
    delegationChain: null,
    input: { agent: { tags: [] }, action, resource: 'r', args: { password: 'hunter2', path: '/x' }, context: {}, delegation: { depth: 1, chain: [] } },
    details: null,
  };
}

/** The batch's entries as objects. */
function entriesOf(batch: WalBatch | null): Array<{ seq: number; action: string }> {
  return batch === null ? [] : (JSON.parse(`[${batch.entries.toString('utf8')}]`) as Array<{ seq: number; action: string }>);
}

describe('AuditWal', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wal-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  async function recordAll(wal: AuditWal, actions: string[]): Promise<void> {
    for (const action of actions) wal.record(record(action));
    await wal.durable();
    await wal.synced();
  }

  it('numbers entries from 1, has them on disk once durable, redacted, and batches them in order', async () => {
    const wal = AuditWal.open(dir, 1 << 20, clean, logger);
    await recordAll(wal, ['read:a', 'read:b', 'read:c']);
    const onDisk = fs.readFileSync(path.join(dir, 'audit.wal'), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { seq: number; action: string; input: { args: Record<string, unknown> } });
    expect(onDisk.map((line) => [line.seq, line.action])).toEqual([[1, 'read:a'], [2, 'read:b'], [3, 'read:c']]);
    expect(onDisk[0].input.args).toEqual({ password: '[redacted]', path: '/x' });
    const batch = wal.batch(2, 1 << 20)!;
    expect([batch.firstSeq, batch.lastSeq, batch.count]).toEqual([1, 2, 2]);
    expect(entriesOf(batch)[1]).toMatchObject({ seq: 2, action: 'read:b' });
    await wal.close();
  });

  it('in sync mode, resolves durable() only once the entries are synced, and forwards only synced entries', async () => {
    const wal = AuditWal.open(dir, 1 << 20, clean, logger, 'sync');
    wal.record(record('read:a'));
    expect(wal.batch(10, 1 << 20)).toBeNull();
    await wal.durable();
    expect(wal.batch(10, 1 << 20)).toMatchObject({ firstSeq: 1, lastSeq: 1 });
    await wal.close();
  });

  it('recovers unacknowledged entries after a restart and continues the numbering', async () => {
    const first = AuditWal.open(dir, 1 << 20, clean, logger);
    await recordAll(first, ['read:a', 'read:b', 'read:c']);
    await first.acknowledge(1);
    // No close: as after kill -9.
    const second = AuditWal.open(dir, 1 << 20, clean, logger);
    expect(second.state()).toMatchObject({ lastSeq: 3, ackedSeq: 1, pendingEntries: 2 });
    expect(second.batch(10, 1 << 20)).toMatchObject({ firstSeq: 2, lastSeq: 3 });
    await recordAll(second, ['read:d']);
    expect(entriesOf(second.batch(10, 1 << 20)).map((entry) => entry.seq)).toEqual([2, 3, 4]);
    await second.close();
  });

  it('cuts off a torn last line left by a kill mid-write', async () => {
    const wal = AuditWal.open(dir, 1 << 20, clean, logger);
    await recordAll(wal, ['read:a', 'read:b']);
    await wal.close();
    fs.appendFileSync(path.join(dir, 'audit.wal'), '{"seq":3,"id":"aud_tor');
    const recovered = AuditWal.open(dir, 1 << 20, clean, logger);
    expect(recovered.state()).toMatchObject({ lastSeq: 2, pendingEntries: 2 });
    await recordAll(recovered, ['read:c']);
    const lines = fs.readFileSync(path.join(dir, 'audit.wal'), 'utf8').trim().split('\n');
    expect(lines.map((line) => (JSON.parse(line) as { seq: number }).seq)).toEqual([1, 2, 3]);
    await recovered.close();
  });

  it('empties the file once everything is acknowledged, and never reuses a number', async () => {
    const wal = AuditWal.open(dir, 1 << 20, clean, logger);
    await recordAll(wal, ['read:a', 'read:b']);
    await wal.acknowledge(2);
    expect(fs.statSync(path.join(dir, 'audit.wal')).size).toBe(0);
    expect(wal.batch(10, 1 << 20)).toBeNull();
    await wal.close();
    const reopened = AuditWal.open(dir, 1 << 20, clean, logger);
    await recordAll(reopened, ['read:c']);
    expect(reopened.batch(10, 1 << 20)).toMatchObject({ firstSeq: 3, lastSeq: 3 });
    await reopened.close();
  });

  it('rewrites the file without its acknowledged head once that head is large and the rest is short to copy', async () => {
    const wal = AuditWal.open(dir, 64 << 20, clean, logger);
    const actions = Array.from({ length: 6000 }, (_, index) => `read:${'x'.repeat(2000)}/${index}`);
    await recordAll(wal, actions);
    const before = fs.statSync(path.join(dir, 'audit.wal')).size;
    await wal.acknowledge(5000);
    // 1000 entries of ~2.5 KB are more than a short copy: the file waits for forwarding to catch up.
    expect(fs.statSync(path.join(dir, 'audit.wal')).size).toBe(before);
    await wal.acknowledge(5800);
    const after = fs.statSync(path.join(dir, 'audit.wal')).size;
    expect(after).toBeLessThan(before / 20);
    expect(wal.batch(10_000, 64 << 20)).toMatchObject({ firstSeq: 5801, lastSeq: 6000 });
    await wal.close();
    expect(AuditWal.open(dir, 64 << 20, clean, logger).state()).toMatchObject({ lastSeq: 6000, ackedSeq: 5800, pendingEntries: 200 });
  });

  it('stops growing at its bound, counts what it drops, and keeps the numbers used', async () => {
    const wal = AuditWal.open(dir, 4096, clean, logger);
    await recordAll(wal, Array.from({ length: 20 }, (_, index) => `read:${index}`));
    const state = wal.state();
    expect(state.fileBytes).toBeLessThanOrEqual(4096);
    expect(state.dropped).toBeGreaterThan(0);
    expect(state.overflowing).toBe(true);
    expect(state.lastSeq).toBe(20);
    const kept = state.pendingEntries;
    await wal.acknowledge(kept);
    await recordAll(wal, ['read:after']);
    expect(wal.state()).toMatchObject({ overflowing: false, lastSeq: 21 });
    await wal.close();
    const last = AuditWal.open(dir, 4096, clean, logger);
    expect(last.state().lastSeq).toBe(21);
    await last.close();
  });
});

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import type { AuditRecord } from '../core/audit-record/audit-record';
import { AuditSanitizer } from '../core/audit-record/audit-sanitizer';
import { AuditWal, WalBatch } from './audit-wal';
import { WalSegment } from './wal-segment';

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

/** The lines of every segment file, oldest first. */
function linesOnDisk(dir: string): Array<{ seq: number; action: string; input: { args: Record<string, unknown> } }> {
  const text = WalSegment.list(dir)
    .map((file) => fs.readFileSync(file, 'utf8'))
    .join('');
  return text === '' ? [] : text.trim().split('\n').map((line) => JSON.parse(line) as { seq: number; action: string; input: { args: Record<string, unknown> } });
}

function bytesOnDisk(dir: string): number {
  return WalSegment.list(dir).reduce((sum, file) => sum + fs.statSync(file).size, 0);
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
    const onDisk = linesOnDisk(dir);
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
    fs.appendFileSync(WalSegment.list(dir).at(-1)!, '{"seq":3,"id":"aud_tor');
    const recovered = AuditWal.open(dir, 1 << 20, clean, logger);
    expect(recovered.state()).toMatchObject({ lastSeq: 2, pendingEntries: 2 });
    await recordAll(recovered, ['read:c']);
    expect(linesOnDisk(dir).map((line) => line.seq)).toEqual([1, 2, 3]);
    await recovered.close();
  });

  it('empties the file once everything is acknowledged, and never reuses a number', async () => {
    const wal = AuditWal.open(dir, 1 << 20, clean, logger);
    await recordAll(wal, ['read:a', 'read:b']);
    await wal.acknowledge(2);
    expect(bytesOnDisk(dir)).toBe(0);
    expect(wal.batch(10, 1 << 20)).toBeNull();
    await wal.close();
    const reopened = AuditWal.open(dir, 1 << 20, clean, logger);
    await recordAll(reopened, ['read:c']);
    expect(reopened.batch(10, 1 << 20)).toMatchObject({ firstSeq: 3, lastSeq: 3 });
    await reopened.close();
  });

  it('moves on to a new segment file as one fills, and deletes a segment once all its lines are acknowledged', async () => {
    const wal = AuditWal.open(dir, 64 << 20, clean, logger, 'write', 1 << 20);
    const actions = Array.from({ length: 6000 }, (_, index) => `read:${'x'.repeat(2000)}/${index}`);
    for (let from = 0; from < actions.length; from += 250) await recordAll(wal, actions.slice(from, from + 250));
    const files = WalSegment.list(dir).length;
    expect(files).toBeGreaterThan(10);
    await wal.acknowledge(5000);
    // Each turn's 250 lines (about 1.1 MB) filled a segment: those of lines 5001-6000 are left.
    expect(WalSegment.list(dir).length).toBe(4);
    expect(linesOnDisk(dir).map((line) => line.seq)).toEqual(Array.from({ length: 1000 }, (_, index) => 5001 + index));
    expect(wal.state().fileBytes).toBe(bytesOnDisk(dir));
    await wal.close();
    const reopened = AuditWal.open(dir, 64 << 20, clean, logger, 'write', 1 << 20);
    expect(reopened.state()).toMatchObject({ lastSeq: 6000, ackedSeq: 5000, pendingEntries: 1000 });
    const forwarded: number[] = [];
    for (let batch = reopened.batch(300, 64 << 20); batch !== null; batch = reopened.batch(300, 64 << 20)) {
      forwarded.push(...entriesOf(batch).map((entry) => entry.seq));
      await reopened.acknowledge(batch.lastSeq);
    }
    expect(forwarded).toEqual(Array.from({ length: 1000 }, (_, index) => 5001 + index));
    expect(bytesOnDisk(dir)).toBe(0);
    await reopened.close();
  });

  it('drops nothing under sustained load when forwarding keeps a backlog but keeps up', async () => {
    // 20 MB of lines through a buffer bounded at 8 MB, the gateway always a turn's lines behind.
    const wal = AuditWal.open(dir, 8 << 20, clean, logger);
    for (let turn = 0; turn < 20; turn++) {
      await recordAll(wal, Array.from({ length: 500 }, (_, index) => `read:${'y'.repeat(2000)}/${turn}/${index}`));
      await wal.acknowledge(wal.state().lastSeq - 500);
    }
    expect(wal.state()).toMatchObject({ dropped: 0, overflowing: false, lastSeq: 10_000, pendingEntries: 500 });
    expect(bytesOnDisk(dir)).toBeLessThan(8 << 20);
    await wal.close();
  });

  it('reads the single audit.wal file of earlier versions as its oldest segment', async () => {
    const wal = AuditWal.open(dir, 1 << 20, clean, logger);
    await recordAll(wal, ['read:a', 'read:b']);
    await wal.close();
    const [segment] = WalSegment.list(dir);
    fs.renameSync(segment, path.join(dir, 'audit.wal'));
    const upgraded = AuditWal.open(dir, 1 << 20, clean, logger);
    await recordAll(upgraded, ['read:c']);
    expect(entriesOf(upgraded.batch(10, 1 << 20)).map((entry) => entry.seq)).toEqual([1, 2, 3]);
    await upgraded.acknowledge(3);
    expect(bytesOnDisk(dir)).toBe(0);
    await upgraded.close();
  });

  it('replaces an input too large for one ingest request by a marker, keeping the rest of the entry', async () => {
    const wal = AuditWal.open(dir, 16 << 20, clean, logger);
    const large = record('read:large');
    const hundredKeys = () => Object.fromEntries(Array.from({ length: 100 }, (_, index) => [`k${index}`, 'p'.repeat(2000)]));
    large.input = { ...(large.input as object), args: { a: hundredKeys(), b: hundredKeys() }, context: { c: hundredKeys() } };
    await recordAll(wal, ['read:small']);
    wal.record(large);
    await wal.synced();
    const [small, stored] = linesOnDisk(dir) as unknown as Array<{ action: string; input: Record<string, unknown> }>;
    expect(small.input).toMatchObject({ args: { path: '/x' } });
    expect(stored.action).toBe('read:large');
    expect(stored.input).toEqual({ truncated: true, jsonChars: expect.any(Number) as number });
    expect(stored.input.jsonChars as number).toBeGreaterThan(256 * 1024);
    await wal.close();
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

  it('never reuses the numbers of dropped entries after a restart, even after a kill -9', async () => {
    const wal = AuditWal.open(dir, 4096, clean, logger);
    await recordAll(wal, Array.from({ length: 20 }, (_, index) => `read:${index}`));
    expect(wal.state()).toMatchObject({ lastSeq: 20, overflowing: true });
    // No close: as after kill -9.
    const restarted = AuditWal.open(dir, 1 << 20, clean, logger);
    expect(restarted.state().lastSeq).toBe(20);
    await restarted.close();
  });

  it('keeps the numbering across a clean restart when audit.acked is lost and no line is left', async () => {
    const wal = AuditWal.open(dir, 1 << 20, clean, logger);
    await recordAll(wal, ['read:a', 'read:b']);
    await wal.acknowledge(2);
    await wal.close();
    fs.rmSync(path.join(dir, 'audit.acked'));
    const reopened = AuditWal.open(dir, 1 << 20, clean, logger);
    await recordAll(reopened, ['read:c']);
    expect(reopened.batch(10, 1 << 20)).toMatchObject({ firstSeq: 3, lastSeq: 3 });
    await reopened.close();
  });

  it.each([
    ['audit.acked', 'garbage\n'],
    ['audit.acked', '99999999999999999999'],
    ['audit.seq', 'Infinity'],
    ['audit.seq', '1e300'],
    ['audit.seq', '-3'],
    ['audit.seq', ''],
  ])('refuses to start, naming %s, when it holds %j', async (name, text) => {
    const wal = AuditWal.open(dir, 1 << 20, clean, logger);
    await recordAll(wal, ['read:a']);
    await wal.close();
    fs.writeFileSync(path.join(dir, name), text);
    expect(() => AuditWal.open(dir, 1 << 20, clean, logger)).toThrow(name);
  });

  it('moves a damaged line in the middle of a segment aside and keeps, and forwards, the valid lines after it', async () => {
    const wal = AuditWal.open(dir, 1 << 20, clean, logger);
    await recordAll(wal, Array.from({ length: 10 }, (_, index) => `read:n${index + 1}`));
    await wal.close();
    const [file] = WalSegment.list(dir);
    const lines = fs.readFileSync(file, 'utf8').split('\n');
    lines[4] = '{"seq":5,"garbage';
    fs.writeFileSync(file, lines.join('\n'));
    const recovered = AuditWal.open(dir, 1 << 20, clean, logger);
    expect(recovered.state()).toMatchObject({ lastSeq: 10, pendingEntries: 9, damagedLines: 1 });
    expect(fs.readFileSync(`${file}.damaged`, 'utf8')).toBe('{"seq":5,"garbage\n');
    await recordAll(recovered, ['read:n11']);
    const forwarded: number[] = [];
    for (let batch = recovered.batch(3, 1 << 20); batch !== null; batch = recovered.batch(3, 1 << 20)) {
      forwarded.push(...entriesOf(batch).map((entry) => entry.seq));
      await recovered.acknowledge(batch.lastSeq);
    }
    expect(forwarded).toEqual([1, 2, 3, 4, 6, 7, 8, 9, 10, 11]);
    await recovered.close();
  });

  it('never gives again the number of a damaged last line', async () => {
    const wal = AuditWal.open(dir, 1 << 20, clean, logger);
    await recordAll(wal, ['read:a', 'read:b']);
    await wal.close();
    const [file] = WalSegment.list(dir);
    fs.appendFileSync(file, '{"seq":3,"garbage\n');
    const recovered = AuditWal.open(dir, 1 << 20, clean, logger);
    expect(recovered.state()).toMatchObject({ lastSeq: 3, damagedLines: 1 });
    await recovered.close();
  });

  it('rejects the answers of entries whose write failed with a 503, says so in its state, keeps their numbers, and recovers', async () => {
    const wal = AuditWal.open(dir, 1 << 20, clean, logger);
    await recordAll(wal, ['read:a']);
    const full = Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    const write = jest.spyOn(fs, 'writeSync').mockImplementationOnce(() => {
      throw full;
    });
    wal.record(record('read:b'));
    wal.record(record('read:c'));
    await expect(wal.durable()).rejects.toMatchObject({ code: 'service_unavailable', details: { decision: 'deny' } });
    write.mockRestore();
    expect(wal.state()).toMatchObject({ lastSeq: 3, dropped: 2, writeError: 'ENOSPC: no space left on device, write' });
    // Killed now: the numbers of the lost entries are not given again.
    const restarted = AuditWal.open(dir, 1 << 20, clean, logger);
    expect(restarted.state().lastSeq).toBe(3);
    await restarted.close();
    await recordAll(wal, ['read:d']);
    expect(wal.state()).toMatchObject({ lastSeq: 4, writeError: null });
    await wal.close();
  });
});

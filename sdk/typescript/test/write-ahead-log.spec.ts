import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AuditEvent } from '../src/audit-event';
import { WriteAheadLog } from '../src/write-ahead-log';

/** An outcome event of about 100 KB (a long result summary), numbered. */
function event(index: number): AuditEvent {
  return { eventId: `ev_${index}`, agentId: 'agent_1', plugin: 'FilePlugin', function: 'ReadFile', decision: 'allow', durationMs: 3, resultSummary: 'r'.repeat(100_000), occurredAt: new Date(0).toISOString() };
}

describe('WriteAheadLog', () => {
  let dir: string;
  beforeEach(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sdk-wal-'))));
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('refuses a second client on the same file while the first has it, and hands it over on close', async () => {
    const file = path.join(dir, 'audit.wal');
    const first = await WriteAheadLog.openFile(file);
    first.log.append(event(1));
    await expect(WriteAheadLog.openFile(file)).rejects.toThrow(`the audit write-ahead file ${file} is in use by process ${process.pid}; give each client its own auditLogPath`);
    await first.log.close();
    const second = await WriteAheadLog.openFile(file);
    expect(second.unacknowledged.map((pending) => pending.eventId)).toEqual(['ev_1']);
    await second.log.close();
  });

  it('takes over the lock of a process that has ended', async () => {
    const file = path.join(dir, 'audit.wal');
    const ended = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
    fs.writeFileSync(`${file}.lock`, ended.stdout.toString());
    const { log } = await WriteAheadLog.openFile(file);
    expect(fs.readFileSync(`${file}.lock`, 'utf8')).toBe(String(process.pid));
    await log.close();
    expect(fs.existsSync(`${file}.lock`)).toBe(false);
  });

  // A container's process is often pid 1 at every start: the lock its previous run left names
  // this very process, and refusing it ("in use by process 1") stopped the restarted app.
  it('takes over a lock naming this process when none of its clients holds the file', async () => {
    const file = path.join(dir, 'audit.wal');
    fs.writeFileSync(file, `${JSON.stringify({ event: event(7) })}\n`);
    fs.writeFileSync(`${file}.lock`, String(process.pid));
    const { log, unacknowledged } = await WriteAheadLog.openFile(file);
    expect(unacknowledged.map((pending) => pending.eventId)).toEqual(['ev_7']);
    await log.close();
  });

  it('stays small while events keep arriving as earlier ones are acknowledged, and loses none', async () => {
    const file = path.join(dir, 'audit.wal');
    const { log } = await WriteAheadLog.openFile(file);
    // Steady traffic: the next event arrives as soon as the last is on disk, and each is
    // acknowledged once the next is written, so something is always unacknowledged when an
    // acknowledgement is made. 100 events of 100 KB.
    log.append(event(0));
    let largest = 0;
    for (let index = 1; index <= 100; index++) {
      await log.sync();
      log.append(event(index));
      log.acknowledge([`ev_${index - 1}`]);
      largest = Math.max(largest, fs.statSync(file).size);
    }
    await log.sync();
    // 10 MB went through, never more than an event or two unacknowledged: the file is rewritten
    // once 4 MB were appended (COMPACT_AFTER_BYTES), not left to grow while traffic lasts.
    expect(largest).toBeLessThan(6 * 1024 * 1024);
    await log.close();
    const reopened = await WriteAheadLog.openFile(file);
    expect(reopened.unacknowledged.map((pending) => pending.eventId)).toEqual(['ev_100']);
    await reopened.log.close();
  });
});

import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { AuditEvent } from './audit-event';

const fdatasync = promisify(fs.fdatasync);

/** Rewrite the file once this much was appended while events stayed unacknowledged. */
const COMPACT_AFTER_BYTES = 4 * 1024 * 1024;

type LogRecord = { event: AuditEvent } | { ack: string[] };

/** The write-ahead files the clients of this process hold: a lock naming this process is theirs only if listed here. */
const HELD_HERE = new Set<string>();

/**
 * The audit events' write-ahead file: one JSON line per event, one per acknowledged batch.
 * append() hands the line to the operating system at once (a write(2), so a crash of the process
 * loses nothing); sync() makes what was appended durable with one fdatasync shared by every event
 * appended since the last (group commit). Emptied when nothing is left unacknowledged, rewritten
 * with only the unacknowledged events when it grows; on open, the events never acknowledged
 * (its own, and those of the files it adopts from ended processes) are handed back to be sent.
 */
export class WriteAheadLog {
  private readonly open = new Map<string, string>();
  /** Lines appended while a compaction replaces the file: written to the new file once it is in place. */
  private carried: string[] | null = null;
  private appendedBytes = 0;
  private unsynced = false;
  private syncing: Promise<void> | null = null;
  private nextSync: Promise<void> | null = null;
  private compaction: Promise<void> | null = null;

  private constructor(
    private readonly file: string,
    private fd: number,
  ) {}

  /**
   * Opens (creating) the file and returns it with the events never acknowledged: its own and those
   * of `adopted` (files of ended processes, already renamed to names this process locked), which
   * are moved into it and then removed.
   */
  static async openFile(file: string, adopted: string[] = []): Promise<{ log: WriteAheadLog; unacknowledged: AuditEvent[] }> {
    await fs.promises.mkdir(path.dirname(file), { recursive: true });
    await takeLock(file);
    try {
      const log = new WriteAheadLog(file, fs.openSync(file, 'a'));
      for (const source of [file, ...adopted]) log.load(await readText(source));
      await log.compact();
      for (const source of adopted) {
        await fs.promises.rm(source, { force: true });
        await releaseLock(source);
      }
      const unacknowledged = [...log.open.values()].map((line) => (JSON.parse(line) as { event: AuditEvent }).event);
      return { log, unacknowledged };
    } catch (error) {
      await releaseLock(file);
      throw error;
    }
  }

  /** Appends the event (in the operating system's hands on return, durable after the next sync()). */
  append(event: AuditEvent): void {
    const line = JSON.stringify({ event });
    this.open.set(event.eventId, line);
    this.write(`${line}\n`);
  }

  /**
   * Resolves once everything appended before the call is on disk. Callers share fdatasyncs: one
   * in flight covers what was appended before it started, and those who came meanwhile share the
   * next one.
   */
  sync(): Promise<void> {
    if (this.compaction !== null) return this.compaction.then(() => this.sync());
    if (!this.unsynced) return this.syncing ?? Promise.resolve();
    if (this.syncing !== null) {
      this.nextSync ??= this.syncing.then(() => {
        this.nextSync = null;
        return this.sync();
      });
      return this.nextSync;
    }
    this.unsynced = false;
    this.syncing = fdatasync(this.fd).finally(() => (this.syncing = null));
    return this.syncing;
  }

  /** Records that the gateway has these events; empties or compacts the file when it can. */
  acknowledge(eventIds: string[]): void {
    for (const id of eventIds) this.open.delete(id);
    if (this.open.size === 0 && this.carried === null) {
      // Not fsynced: a lost truncation or acknowledgement only means a resend, which the gateway ignores.
      fs.ftruncateSync(this.fd, 0);
      this.appendedBytes = 0;
      return;
    }
    this.write(`${JSON.stringify({ ack: eventIds })}\n`);
    if (this.appendedBytes > COMPACT_AFTER_BYTES && this.compaction === null) {
      this.compaction = this.compact().finally(() => (this.compaction = null));
    }
  }

  /** How many events it holds unacknowledged. */
  get size(): number {
    return this.open.size;
  }

  /**
   * Makes what was appended durable and closes the file; `removeIfEmpty` (a file named for this
   * process alone) deletes it when nothing is left unacknowledged. Then lets another client open it.
   */
  async close(removeIfEmpty = false): Promise<void> {
    await this.compaction;
    await this.sync();
    fs.closeSync(this.fd);
    if (removeIfEmpty && this.open.size === 0) await fs.promises.rm(this.file, { force: true });
    await releaseLock(this.file);
  }

  private load(text: string): void {
    for (const record of parseRecords(text)) {
      if ('event' in record) this.open.set(record.event.eventId, JSON.stringify(record));
      else for (const id of record.ack) this.open.delete(id);
    }
  }

  private write(text: string): void {
    if (this.carried !== null) {
      this.carried.push(text);
      return;
    }
    this.appendedBytes += fs.writeSync(this.fd, text);
    this.unsynced = true;
  }

  /**
   * Replaces the file by the unacknowledged events only (atomically: temporary file, fsync,
   * rename, fsync of the directory). Lines appended meanwhile wait in `carried` and go to the new
   * file; sync() waits for the compaction, so a synced event is on disk whatever happens next.
   */
  private async compact(): Promise<void> {
    this.carried = [];
    try {
      await this.syncing?.catch(() => undefined);
      if (this.open.size === 0) {
        fs.ftruncateSync(this.fd, 0);
      } else {
        const temp = `${this.file}.tmp`;
        const handle = await fs.promises.open(temp, 'w');
        try {
          await handle.write([...this.open.values()].map((line) => `${line}\n`).join(''));
          await handle.datasync();
        } finally {
          await handle.close();
        }
        await fs.promises.rename(temp, this.file);
        await syncDirectory(path.dirname(this.file));
        const previous = this.fd;
        this.fd = fs.openSync(this.file, 'a');
        fs.closeSync(previous);
      }
      this.appendedBytes = 0;
    } finally {
      const carried = this.carried;
      this.carried = null;
      if (carried.length > 0) this.write(carried.join(''));
    }
  }
}

async function readText(file: string): Promise<string> {
  return fs.promises.readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => (error.code === 'ENOENT' ? '' : Promise.reject(error)));
}

export function lockOf(file: string): string {
  return `${file}.lock`;
}

/**
 * Takes `<file>.lock` for this client, or throws naming the process that holds it. Two clients
 * on one file each resent the other's events on start and, compacting the file when their own
 * were acknowledged, dropped the other's unacknowledged ones. A lock left by a process that
 * has ended is taken over.
 */
export async function takeLock(file: string): Promise<void> {
  const lock = lockOf(file);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await fs.promises.writeFile(lock, String(process.pid), { flag: 'wx' });
      HELD_HERE.add(file);
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const owner = await lockOwner(file);
    if (owner !== undefined && isHeld(owner, file)) throw new Error(`the audit write-ahead file ${file} is in use by process ${owner}; give each client its own auditLogPath`);
    await fs.promises.rm(lock, { force: true });
  }
  throw new Error(`could not lock the audit write-ahead file ${file}`);
}

export async function releaseLock(file: string): Promise<void> {
  HELD_HERE.delete(file);
  await fs.promises.rm(lockOf(file), { force: true });
}

/** The process id a lock names, undefined when there is no lock. */
export async function lockOwner(file: string): Promise<number | undefined> {
  const text = await fs.promises.readFile(lockOf(file), 'utf8').catch(() => undefined);
  return text === undefined ? undefined : Number(text);
}

/**
 * Whether a lock naming `pid` on `file` still holds: its process runs, and, when that is this
 * process, one of its clients has the file (a container's process is often pid 1 each time it
 * starts, so a lock left by the previous run names this very process).
 */
export function isHeld(pid: number, file: string): boolean {
  if (pid === process.pid) return HELD_HERE.has(file);
  return isRunning(pid);
}

function isRunning(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Makes a rename in `dir` durable. */
async function syncDirectory(dir: string): Promise<void> {
  const handle = await fs.promises.open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** The file's records; a torn last line (a crash mid-append, never acknowledged to anyone) is skipped. */
function parseRecords(text: string): LogRecord[] {
  const records: LogRecord[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      records.push(JSON.parse(line) as LogRecord);
    } catch {
      continue;
    }
  }
  return records;
}

import fs from 'node:fs';
import path from 'node:path';
import type { AuditEvent } from './http-transport';

/** Rewrite the file once this much was appended while events stayed unacknowledged. */
const COMPACT_AFTER_BYTES = 4 * 1024 * 1024;

type LogRecord = { event: AuditEvent } | { ack: string[] };

/**
 * The audit events' write-ahead file: one JSON line per event (appended and fsynced before the
 * caller hears back), one line per acknowledged batch. Emptied when nothing is left
 * unacknowledged, rewritten with only the unacknowledged events when it grows; on open, the
 * events never acknowledged are handed back to be sent again.
 */
export class WriteAheadLog {
  private readonly open = new Map<string, string>();
  private buffered: string[] = [];
  private pendingWrite: Promise<void> | null = null;
  private tail: Promise<unknown> = Promise.resolve();
  private appendedBytes = 0;

  private constructor(
    private readonly file: string,
    private handle: fs.promises.FileHandle,
  ) {}

  /** Opens (creating) the file and returns it with the events it holds that were never acknowledged. */
  static async openFile(file: string): Promise<{ log: WriteAheadLog; unacknowledged: AuditEvent[] }> {
    await fs.promises.mkdir(path.dirname(file), { recursive: true });
    await takeLock(file);
    try {
      return await WriteAheadLog.read(file);
    } catch (error) {
      await fs.promises.rm(lockOf(file), { force: true });
      throw error;
    }
  }

  private static async read(file: string): Promise<{ log: WriteAheadLog; unacknowledged: AuditEvent[] }> {
    const text = await fs.promises.readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => (error.code === 'ENOENT' ? '' : Promise.reject(error)));
    const log = new WriteAheadLog(file, await fs.promises.open(file, 'a'));
    for (const record of parseRecords(text)) {
      if ('event' in record) log.open.set(record.event.eventId, JSON.stringify(record));
      else for (const id of record.ack) log.open.delete(id);
    }
    await log.rewrite();
    const unacknowledged = [...log.open.values()].map((line) => (JSON.parse(line) as { event: AuditEvent }).event);
    return { log, unacknowledged };
  }

  /** Appends the event; resolves once it is on disk (events appended together share one fsync). */
  append(event: AuditEvent): Promise<void> {
    const line = JSON.stringify({ event });
    this.open.set(event.eventId, line);
    this.buffered.push(`${line}\n`);
    this.pendingWrite ??= this.serially(async () => {
      const text = this.buffered.join('');
      this.buffered = [];
      this.pendingWrite = null;
      await this.handle.write(text);
      await this.handle.datasync();
      this.appendedBytes += Buffer.byteLength(text);
    });
    return this.pendingWrite;
  }

  /** Records that the gateway has these events; empties or compacts the file when it can. */
  acknowledge(eventIds: string[]): Promise<void> {
    for (const id of eventIds) this.open.delete(id);
    return this.serially(async () => {
      // Events still waiting to be written are in `open` too: the rewrite writes them, so under
      // steady traffic (something always waiting) the file is still compacted.
      if (this.open.size === 0 || this.appendedBytes > COMPACT_AFTER_BYTES) return this.rewrite();
      // Not fsynced: a lost acknowledgement only means a resend, which the gateway ignores.
      await this.handle.write(`${JSON.stringify({ ack: eventIds })}\n`);
    });
  }

  /** Closes the file after the writes already asked for, and lets another client open it. */
  async close(): Promise<void> {
    await this.serially(() => this.handle.close());
    await fs.promises.rm(lockOf(this.file), { force: true });
  }

  /**
   * Replaces the file by the unacknowledged events only, those not yet written included
   * (atomically: temporary file, fsync, rename, fsync of the directory, so that an event whose
   * append resolves after this is on disk whatever happens next).
   */
  private async rewrite(): Promise<void> {
    this.buffered = [];
    if (this.open.size === 0) {
      await this.handle.truncate(0);
    } else {
      const temp = `${this.file}.tmp`;
      const file = await fs.promises.open(temp, 'w');
      await file.write([...this.open.values()].map((line) => `${line}\n`).join(''));
      await file.datasync();
      await file.close();
      await fs.promises.rename(temp, this.file);
      await syncDirectory(path.dirname(this.file));
      await this.handle.close();
      this.handle = await fs.promises.open(this.file, 'a');
    }
    this.appendedBytes = 0;
  }

  private serially<T>(work: () => Promise<T>): Promise<T> {
    const run = this.tail.then(work);
    this.tail = run.catch(() => undefined);
    return run;
  }
}

function lockOf(file: string): string {
  return `${file}.lock`;
}

/**
 * Takes `<file>.lock` for this client, or throws naming the process that holds it. Two clients
 * on one file each resent the other's events on start and, compacting the file when their own
 * were acknowledged, dropped the other's unacknowledged ones. A lock left by a process that
 * has ended is taken over.
 */
async function takeLock(file: string): Promise<void> {
  const lock = lockOf(file);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await fs.promises.writeFile(lock, String(process.pid), { flag: 'wx' });
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const owner = Number(await fs.promises.readFile(lock, 'utf8').catch(() => ''));
    if (isRunning(owner)) throw new Error(`the audit write-ahead file ${file} is in use by process ${owner}; give each client its own auditLogPath`);
    await fs.promises.rm(lock, { force: true });
  }
  throw new Error(`could not lock the audit write-ahead file ${file}`);
}

/** Whether `pid` is a live process (this one included: another client of it holds the file). */
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

import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { compactInput } from '../audit/audit-input';
import type { AuditRecord } from '../audit/audit-record';
import { AuditSanitizer } from '../audit/audit-sanitizer';
import type { DecisionLog } from '../decisions/decision-sources';
import { AckFile } from './ack-file';
import { readFileIfExists, writeFileAtomic } from './atomic-file';
import { walLine } from './wal-line';
import { atTurnEnd } from '../common/turn-end';

const WAL_FILE = 'audit.wal';
const ACKED_FILE = 'audit.acked';
const SEQ_FILE = 'audit.seq';
/**
 * Rewrite the file without its acknowledged head once that head is this large and what is left
 * to copy is at most COMPACT_MAX_COPY_BYTES: the copy runs on the event loop, so it stays short
 * (about a millisecond); with a longer backlog the file waits until forwarding catches up.
 */
const COMPACT_MIN_BYTES = 8 * 1024 * 1024;
const COMPACT_MAX_COPY_BYTES = 1024 * 1024;
const SEQ_LINE = /^\{"seq":(\d+),/;
const COMMA = 0x2c;
/** The turn's lines are encoded into one reused buffer (grown for a large turn, shrunk back after). */
const STAGING_BYTES = 256 * 1024;
/** UTF-8 takes at most 3 bytes per UTF-16 code unit. */
const MAX_UTF8_PER_CHAR = 3;
/** AUDIT_DURABILITY=write: the background fdatasync runs at most this often (the power-loss window). */
const BACKGROUND_SYNC_MS = 10;

/** A batch of entries to forward: their JSON objects joined by commas (a JSON array's inside), and their numbers. */
export interface WalBatch {
  entries: Buffer;
  count: number;
  firstSeq: number;
  lastSeq: number;
}

/** What /health shows of the buffer. */
export interface WalState {
  fileBytes: number;
  maxBytes: number;
  /** Entries written but not yet acknowledged by the gateway. */
  pendingEntries: number;
  lastSeq: number;
  ackedSeq: number;
  /** Entries not kept because the file was full (their numbers show as a gap at the gateway). */
  dropped: number;
  overflowing: boolean;
}

/**
 * When an answer may leave: `write` once its entry is written to the file (survives kill -9; a
 * power loss can lose what the background fdatasync had not reached, at most one sync behind),
 * `sync` once it is also fdatasynced (survives a power loss; costs a sync's latency per answer).
 */
export type WalDurability = 'write' | 'sync';

/** Answers (or a background sync) waiting for the lines up to `seq`. */
interface SyncGroup {
  promise: Promise<void>;
  resolve: () => void;
  seq?: number;
}

/**
 * The sidecar's audit buffer: a write-ahead file in CACHE_DIR of one JSON line per decision,
 * `{"seq":N, ...audit record}`, N counting from 1 per sidecar and never reused.
 *
 * Durability (group commit): `record` only queues the line; at the end of the event loop's turn
 * the turn's lines are written with one write(2) on the event loop (see `writePending`), and one
 * fdatasync in the thread pool then covers them (one sync at a time; lines of later turns wait
 * for the next). A transport sends its answer only after
 * `durable()` resolves: with AUDIT_DURABILITY=write (the default) once the turn's lines are
 * written, so a kill -9 of the sidecar loses no answered decision and a power loss at most what
 * the background fdatasync had not reached; with `sync` once they are synced, so not even a
 * power loss does, at the price of a sync's latency (≈0.35 ms idle, far more on a busy disk) on
 * every answer. Only synced entries are forwarded, so the gateway never holds an entry the
 * sidecar could lose and renumber.
 *
 * The gateway acknowledges forwarded entries by number; the highest acknowledged number goes to
 * `audit.acked` (durably, see AckFile) and the file is then truncated (everything acknowledged) or
 * rewritten without its acknowledged head. Growth is bounded by `maxBytes`: past it, entries
 * are dropped, counted and logged, and their numbers are still used, so the gateway's fleet
 * status reports exactly which decisions are missing.
 */
export class AuditWal implements DecisionLog {
  private fd: number;
  private readonly file: string;
  /** Sequence numbers and end offsets of the written, unacknowledged lines, from `head` on. */
  private seqs: number[] = [];
  private ends: number[] = [];
  private head = 0;
  /** Offset of the first unacknowledged line. */
  private start = 0;
  private size = 0;
  private lastSeq = 0;
  private ackedSeq = 0;
  private syncedSeq = 0;
  private dropped = 0;
  private overflowing = false;
  /** The queued lines, UTF-8, and their numbers and end offsets in `staging`. */
  private staging = Buffer.allocUnsafe(STAGING_BYTES);
  private stagedBytes = 0;
  private pendingSeqs: number[] = [];
  private pendingEnds: number[] = [];
  private openGroup: SyncGroup | null = null;
  private awaitingSync: SyncGroup[] = [];
  private inSync: SyncGroup | null = null;
  private syncing = false;
  private syncTimer: NodeJS.Timeout | null = null;
  private lastSyncStart = -Infinity;
  private readonly settled = Promise.resolve();
  private ackFile: AckFile | null = null;
  /** The last acknowledgement's write: they go one at a time. */
  private ackWriting: Promise<void> = Promise.resolve();

  private constructor(
    private readonly dir: string,
    private readonly maxBytes: number,
    private readonly clean: AuditSanitizer,
    private readonly logger: Logger,
    private readonly durability: WalDurability,
  ) {
    this.file = path.join(dir, WAL_FILE);
    this.fd = -1;
  }

  /** Opens the buffer in `dir`, recovering what a previous run left (a torn last line is cut off). */
  static open(dir: string, maxBytes: number, clean: AuditSanitizer, logger: Logger, durability: WalDurability = 'write'): AuditWal {
    fs.mkdirSync(dir, { recursive: true });
    const wal = new AuditWal(dir, maxBytes, clean, logger, durability);
    wal.recover();
    return wal;
  }

  record(entry: AuditRecord): void {
    const seq = ++this.lastSeq;
    let line: string;
    try {
      line = this.serialize(seq, entry);
    } catch (error) {
      this.drop(seq, 'entry could not be serialised', error);
      return;
    }
    this.reserve(line.length * MAX_UTF8_PER_CHAR);
    const bytes = this.staging.write(line, this.stagedBytes);
    if (this.size + this.stagedBytes + bytes > this.maxBytes) return this.drop(seq, 'audit buffer full');
    if (this.overflowing) {
      this.overflowing = false;
      this.logger.warn({ dropped: this.dropped, resumedAtSeq: seq }, 'audit buffer has room again');
    }
    this.stagedBytes += bytes;
    this.pendingSeqs.push(seq);
    this.pendingEnds.push(this.stagedBytes);
    if (this.pendingSeqs.length === 1) atTurnEnd(this.writePending);
  }

  /** The buffer never makes a decision wait for room: past its bound it drops and says so. */
  whenWritable(): undefined {
    return undefined;
  }

  /** Resolves once every entry recorded so far is written and synced. */
  durable(): Promise<void> {
    if (this.pendingSeqs.length > 0) return (this.openGroup ??= makeGroup()).promise;
    if (this.durability === 'write') return this.settled;
    const last = this.awaitingSync.at(-1) ?? this.inSync;
    return last?.promise ?? this.settled;
  }

  /** Resolves once every entry recorded so far is written and synced, whatever the durability. */
  async synced(): Promise<void> {
    while (this.pendingSeqs.length > 0) await this.durable();
    const last = this.awaitingSync.at(-1) ?? this.inSync;
    if (last !== null && last !== undefined) await last.promise;
  }

  /** The oldest synced, unacknowledged entries: at most `maxEntries` and about `maxBytes`. */
  batch(maxEntries: number, maxBytes: number): WalBatch | null {
    let end = this.head;
    while (end < this.seqs.length && end - this.head < maxEntries && this.seqs[end] <= this.syncedSeq) {
      if (end > this.head && this.ends[end] - this.start > maxBytes) break;
      end++;
    }
    if (end === this.head) return null;
    // The lines as they are on disk, their newlines turned into the commas of a JSON array.
    const length = this.ends[end - 1] - this.start - 1;
    const entries = Buffer.allocUnsafe(length);
    fs.readSync(this.fd, entries, 0, length, this.start);
    for (let index = this.head; index < end - 1; index++) entries[this.ends[index] - 1 - this.start] = COMMA;
    return { entries, count: end - this.head, firstSeq: this.seqs[this.head], lastSeq: this.seqs[end - 1] };
  }

  /** The gateway has every entry up to `seq`: remember it (off the event loop), then drop them from the file. */
  async acknowledge(seq: number): Promise<void> {
    // After close (shutdown), a batch answered meanwhile is simply forwarded again at the next start.
    if (seq <= this.ackedSeq || this.fd < 0) return;
    const write = this.ackWriting.catch(() => undefined).then(() => this.persistAck(seq));
    this.ackWriting = write;
    await write;
    if (seq <= this.ackedSeq) return;
    this.ackedSeq = seq;
    while (this.head < this.seqs.length && this.seqs[this.head] <= seq) {
      this.start = this.ends[this.head];
      this.head++;
    }
    this.compact();
  }

  state(): WalState {
    return {
      fileBytes: this.size,
      maxBytes: this.maxBytes,
      pendingEntries: this.seqs.length - this.head + this.pendingSeqs.length,
      lastSeq: this.lastSeq,
      ackedSeq: this.ackedSeq,
      dropped: this.dropped,
      overflowing: this.overflowing,
    };
  }

  /** Writes and syncs what is queued, then closes the file (shutdown). */
  async close(): Promise<void> {
    if (this.fd < 0) return;
    await this.synced();
    this.writePending();
    if (this.syncTimer !== null) clearTimeout(this.syncTimer);
    fs.fdatasyncSync(this.fd);
    fs.closeSync(this.fd);
    this.fd = -1;
    await this.ackWriting.catch(() => undefined);
    this.ackFile?.close();
    for (const group of this.awaitingSync) group.resolve();
    this.awaitingSync = [];
  }

  private persistAck(seq: number): Promise<void> {
    return new Promise((resolve, reject) => this.ackFile!.write(seq, (error) => (error ? reject(error) : resolve())));
  }

  private serialize(seq: number, entry: AuditRecord): string {
    return walLine(seq, entry, this.clean.serialize(compactInput(entry.input)) ?? 'null');
  }

  /** Room for `bytes` more in the staging buffer. */
  private reserve(bytes: number): void {
    if (this.stagedBytes + bytes <= this.staging.length) return;
    const larger = Buffer.allocUnsafe(Math.max(this.staging.length * 2, this.stagedBytes + bytes));
    this.staging.copy(larger, 0, 0, this.stagedBytes);
    this.staging = larger;
  }

  private drop(seq: number, why: string, error?: unknown): void {
    this.dropped++;
    if (!this.overflowing) {
      this.overflowing = true;
      this.logger.error({ seq, maxBytes: this.maxBytes, fileBytes: this.size, err: error }, `${why}: audit entries are being dropped until the gateway acknowledges some`);
    }
    // The numbers used must survive a restart, so the gateway sees the gap rather than reuse.
    if (this.dropped % 100 === 1) fs.writeFileSync(path.join(this.dir, SEQ_FILE), String(this.lastSeq));
  }

  /**
   * Writes the turn's queued lines with one write(2) on this thread, at the end of the turn
   * (atTurnEnd), then lets their answers go. The answers cannot leave before the write
   * returns anyway, and a write into the page cache is a copy of a few KB: cheaper than handing
   * it to libuv's thread pool, which costs a thread wake-up and an extra turn of the event loop
   * per write, and on a machine with few cores takes CPU from the requests themselves. Only the
   * fdatasync, which waits for the disk, runs in the thread pool.
   */
  private readonly writePending = (): void => {
    if (this.pendingSeqs.length === 0 || this.fd < 0) return;
    const seqs = this.pendingSeqs;
    const ends = this.pendingEnds;
    const group = this.openGroup ?? makeGroup();
    const position = this.size;
    let failure: unknown = null;
    try {
      writeAll(this.fd, this.staging, this.stagedBytes, position);
      this.size += this.stagedBytes;
    } catch (error) {
      failure = error;
    }
    this.pendingSeqs = [];
    this.pendingEnds = [];
    this.openGroup = null;
    this.stagedBytes = 0;
    if (this.staging.length > STAGING_BYTES * 4) this.staging = Buffer.allocUnsafe(STAGING_BYTES);
    this.written(seqs, ends, group, position, failure);
  };

  private written(seqs: number[], ends: number[], group: SyncGroup, position: number, error: unknown): void {
    if (error) {
      // Nothing after `position` is kept: later writes start there again.
      this.dropped += seqs.length;
      this.logger.error({ err: error, entries: seqs.length }, 'audit entries could not be written to the buffer file');
      group.resolve();
      return;
    }
    for (let index = 0; index < seqs.length; index++) {
      this.seqs.push(seqs[index]);
      this.ends.push(position + ends[index]);
    }
    if (this.durability === 'write') {
      group.resolve();
      this.awaitingSync.push(makeGroup(seqs.at(-1)));
    } else {
      group.seq = seqs.at(-1);
      this.awaitingSync.push(group);
    }
    this.scheduleSync();
  }

  /**
   * Starts the next fdatasync: at once when answers wait for it (`sync`); in the background
   * (`write`) at most every BACKGROUND_SYNC_MS, so that a fast disk does not turn every few
   * requests into a sync and its thread hand-off.
   */
  private scheduleSync(): void {
    if (this.syncing || this.syncTimer !== null || this.awaitingSync.length === 0) return;
    const wait = this.durability === 'sync' ? 0 : this.lastSyncStart + BACKGROUND_SYNC_MS - performance.now();
    if (wait <= 0) return this.startSync();
    this.syncTimer = setTimeout(() => {
      this.syncTimer = null;
      this.startSync();
    }, wait);
  }

  private startSync(): void {
    if (this.syncing || this.awaitingSync.length === 0 || this.fd < 0) return;
    const groups = this.awaitingSync;
    this.awaitingSync = [];
    this.syncing = true;
    this.lastSyncStart = performance.now();
    this.inSync = groups.at(-1)!;
    const upTo = groups.at(-1)!.seq ?? this.syncedSeq;
    fs.fdatasync(this.fd, (error) => {
      this.syncing = false;
      this.inSync = null;
      if (error) this.logger.error({ err: error }, 'audit buffer fdatasync failed');
      this.syncedSeq = Math.max(this.syncedSeq, upTo);
      for (const group of groups) group.resolve();
      this.scheduleSync();
      this.compact();
    });
  }

  /** Truncates (all acknowledged) or rewrites the file without its acknowledged head. */
  private compact(): void {
    if (this.syncing || this.pendingSeqs.length > 0 || this.start === 0) return;
    if (this.head === this.seqs.length) {
      fs.ftruncateSync(this.fd, 0);
      this.resetIndex(0, []);
      return;
    }
    if (this.start < COMPACT_MIN_BYTES || this.size - this.start > COMPACT_MAX_COPY_BYTES) return;
    const rest = Buffer.alloc(this.size - this.start);
    fs.readSync(this.fd, rest, 0, rest.length, this.start);
    writeFileAtomic(this.file, rest);
    fs.closeSync(this.fd);
    this.fd = fs.openSync(this.file, 'r+');
    const shift = this.start;
    this.resetIndex(
      rest.length,
      this.seqs.slice(this.head).map((seq, index) => [seq, this.ends[this.head + index] - shift]),
    );
  }

  private resetIndex(size: number, entries: Array<[number, number]>): void {
    this.seqs = entries.map(([seq]) => seq);
    this.ends = entries.map(([, end]) => end);
    this.head = 0;
    this.start = 0;
    this.size = size;
  }

  private recover(): void {
    const acked = AckFile.open(path.join(this.dir, ACKED_FILE));
    this.ackFile = acked.ackFile;
    this.ackedSeq = acked.ackedSeq;
    const usedSeq = Number(readFileIfExists(path.join(this.dir, SEQ_FILE)) ?? 0) || 0;
    this.fd = fs.openSync(this.file, fs.existsSync(this.file) ? 'r+' : 'w+', 0o600);
    const data = fs.readFileSync(this.file);
    let offset = 0;
    let lastSeq = 0;
    const entries: Array<[number, number]> = [];
    while (offset < data.length) {
      const newline = data.indexOf(10, offset);
      if (newline < 0) break;
      const match = SEQ_LINE.exec(data.subarray(offset, Math.min(newline, offset + 40)).toString('utf8'));
      if (match === null || !isJson(data.subarray(offset, newline))) break;
      lastSeq = Number(match[1]);
      entries.push([lastSeq, newline + 1]);
      offset = newline + 1;
    }
    if (offset < data.length) {
      this.logger.warn({ file: this.file, keptBytes: offset, cutBytes: data.length - offset }, 'audit buffer ended in a torn line (the process was killed mid-write); cut it off');
      fs.ftruncateSync(this.fd, offset);
    }
    const unacked = entries.filter(([seq]) => seq > this.ackedSeq);
    const firstUnacked = entries.length - unacked.length;
    this.seqs = entries.map(([seq]) => seq);
    this.ends = entries.map(([, end]) => end);
    this.head = firstUnacked;
    this.start = firstUnacked === 0 ? 0 : this.ends[firstUnacked - 1];
    this.size = offset;
    this.lastSeq = Math.max(this.ackedSeq, usedSeq, lastSeq);
    this.syncedSeq = lastSeq;
    if (unacked.length > 0) this.logger.info({ entries: unacked.length, from: unacked[0][0], to: lastSeq }, 'audit entries buffered by a previous run will be forwarded');
    this.compact();
  }
}

function makeGroup(seq?: number): SyncGroup {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => (resolve = done));
  return { promise, resolve, seq };
}

/** pwrite(2) until all of `data` is in the file (a regular file rarely takes less). */
function writeAll(fd: number, data: Buffer, length: number, position: number): void {
  let done = 0;
  while (done < length) done += fs.writeSync(fd, data, done, length - done, position + done);
}

function isJson(line: Buffer): boolean {
  try {
    JSON.parse(line.toString('utf8'));
    return true;
  } catch {
    return false;
  }
}

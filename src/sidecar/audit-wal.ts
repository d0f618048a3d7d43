import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { compactInput } from '../core/audit-record/audit-input';
import type { AuditRecord } from '../core/audit-record/audit-record';
import { AuditSanitizer } from '../core/audit-record/audit-sanitizer';
import type { DecisionLog } from '../core/decision/decision-sources';
import { AppError } from '../core/common/app-error';
import { ErrorCode } from '../core/common/error-code';
import { syncDirectoryInBackground } from './atomic-file';
import { SeqFile } from './seq-file';
import { walLine } from './wal-line';
import { atTurnEnd } from '../core/common/turn-end';
import { WalSegment } from './wal-segment';
import { recoverWal } from './wal-recovery';
import { WalBatch, WalForwardCursor } from './wal-forward-cursor';

export type { WalBatch };

const ACKED_FILE = 'audit.acked';
const SEQ_FILE = 'audit.seq';
/**
 * New lines go to a new segment file once the current one is this large (or a quarter of the
 * bound, when that is smaller), so acknowledged lines leave the disk a segment at a time,
 * whatever the forwarding lags behind.
 */
const SEGMENT_BYTES = 8 * 1024 * 1024;
/**
 * A line's input beyond this many characters of JSON is replaced by `{"truncated":true,
 * "jsonChars":N}`, so that every line fits one ingest request (the gateway takes bodies of 1 MiB;
 * UTF-8 is at most 3 bytes a character) and forwarding never stops at one. The sanitizer already
 * bounds strings, keys and items; only inputs of hundreds of such strings come near.
 */
const MAX_INPUT_CHARS = 256 * 1024;
/** The turn's lines are encoded into one reused buffer (grown for a large turn, shrunk back after). */
const STAGING_BYTES = 256 * 1024;
/** UTF-8 takes at most 3 bytes per UTF-16 code unit. */
const MAX_UTF8_PER_CHAR = 3;
/** AUDIT_DURABILITY=write: the background fdatasync runs at most this often (the power-loss window). */
const BACKGROUND_SYNC_MS = 10;

/** What /health shows of the buffer. */
export interface WalState {
  fileBytes: number;
  maxBytes: number;
  /** Entries written but not yet acknowledged by the gateway. */
  pendingEntries: number;
  lastSeq: number;
  ackedSeq: number;
  /** Entries not kept because the buffer was full (their numbers show as a gap at the gateway). */
  dropped: number;
  overflowing: boolean;
  /** Damaged lines of a previous run found at start and moved to `<segment>.damaged` (their numbers show as a gap). */
  damagedLines: number;
  /** Why the last write of entries to the file failed; null once a write succeeds again. */
  writeError: string | null;
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
  reject: (error: Error) => void;
  seq?: number;
}

/**
 * The sidecar's audit buffer: a write-ahead log in CACHE_DIR of one JSON line per decision,
 * `{"seq":N, ...audit record}`, N counting from 1 per sidecar and never reused, kept in segment
 * files (WalSegment) of about SEGMENT_BYTES each.
 *
 * Durability (group commit): `record` only queues the line; at the end of the event loop's turn
 * the turn's lines are written with one write(2) on the event loop (see `writePending`), and one
 * round of fdatasync in the thread pool then covers them (one round at a time; lines of later
 * turns wait for the next). A transport sends its answer only after
 * `durable()` resolves: with AUDIT_DURABILITY=write (the default) once the turn's lines are
 * written, so a kill -9 of the sidecar loses no answered decision and a power loss at most what
 * the background fdatasync had not reached; with `sync` once they are synced, so not even a
 * power loss does, at the price of a sync's latency (≈0.35 ms idle, far more on a busy disk) on
 * every answer. Only synced entries are forwarded, so the gateway never holds an entry the
 * sidecar could lose and renumber.
 *
 * The gateway acknowledges forwarded entries by number; the highest acknowledged number goes to
 * `audit.acked` (durably, see AckFile). A segment whose lines are all acknowledged is deleted
 * (the current one is emptied instead), so nothing is ever copied and the files hold about the
 * unacknowledged lines plus one segment, however far forwarding lags under load. Growth is
 * bounded by `maxBytes`: past it, entries are dropped, counted and logged, and their numbers are
 * still used, so the gateway's fleet status reports exactly which decisions are missing.
 */
export class AuditWal implements DecisionLog {
  /** Oldest first; the last one takes new lines. */
  private segments: WalSegment[] = [];
  private lastSeq = 0;
  private syncedSeq = 0;
  private dropped = 0;
  private damagedLines = 0;
  private writeError: string | null = null;
  private overflowing = false;
  private closed = false;
  /** A segment was created since the directory was last synced. */
  private directoryChanged = false;
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
  private cursor!: WalForwardCursor;
  private seqFile: SeqFile;

  private constructor(
    private readonly dir: string,
    private readonly maxBytes: number,
    private readonly segmentBytes: number,
    private readonly clean: AuditSanitizer,
    private readonly logger: Logger,
    private readonly durability: WalDurability,
  ) {
    this.seqFile = new SeqFile(path.join(dir, SEQ_FILE));
  }

  /** Opens the buffer in `dir`, recovering what a previous run left (a torn last line is cut off). */
  static open(
    dir: string,
    maxBytes: number,
    clean: AuditSanitizer,
    logger: Logger,
    durability: WalDurability = 'write',
    segmentBytes = Math.min(SEGMENT_BYTES, Math.floor(maxBytes / 4)),
  ): AuditWal {
    fs.mkdirSync(dir, { recursive: true });
    const wal = new AuditWal(dir, maxBytes, segmentBytes, clean, logger, durability);
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
    if (this.fileBytes() + this.stagedBytes + bytes > this.maxBytes) return this.drop(seq, 'audit buffer full');
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

  /**
   * Resolves once every entry recorded so far is written (and synced, with `sync`); rejects with
   * a 503 when their write failed: the answer would claim a decision the trail will not hold.
   */
  durable(): Promise<void> {
    if (this.pendingSeqs.length > 0) return (this.openGroup ??= makeGroup()).promise;
    if (this.durability === 'write') return this.settled;
    const last = this.awaitingSync.at(-1) ?? this.inSync;
    return last?.promise ?? this.settled;
  }

  /** Resolves once every entry recorded so far is written and synced, whatever the durability. */
  async synced(): Promise<void> {
    while (this.pendingSeqs.length > 0) await this.durable().catch(() => undefined);
    const last = this.awaitingSync.at(-1) ?? this.inSync;
    if (last !== null && last !== undefined) await last.promise;
  }

  /** The oldest synced entries the gateway has not acknowledged (WalForwardCursor). */
  batch(maxEntries: number, maxBytes: number): WalBatch | null {
    return this.cursor.next(this.segments, this.syncedSeq, maxEntries, maxBytes);
  }

  /** The gateway has every entry up to `seq`: remember it (off the event loop), then drop them from the disk. */
  async acknowledge(seq: number): Promise<void> {
    // After close (shutdown), a batch answered meanwhile is simply forwarded again at the next start.
    if (!(await this.cursor.advance(seq, () => this.closed))) return;
    for (const segment of this.segments) segment.acknowledge(seq);
    this.release();
  }

  /**
   * When the oldest entry the gateway has not acknowledged was decided (its `ts`, read back from
   * its line), null when none waits: how far behind forwarding is (the sidecar's metrics).
   */
  oldestPendingTs(): number | null {
    const segment = this.segments.find((candidate) => candidate.unacknowledged > 0);
    if (segment === undefined) return this.pendingSeqs.length > 0 ? Date.now() : null;
    const ts = /"ts":(\d+)/.exec(segment.read(segment.head, segment.head + 1, 0x0a).toString('utf8', 0, 256))?.[1];
    return ts === undefined ? null : Number(ts);
  }

  state(): WalState {
    let pendingEntries = this.pendingSeqs.length;
    for (const segment of this.segments) pendingEntries += segment.unacknowledged;
    return {
      fileBytes: this.fileBytes(),
      maxBytes: this.maxBytes,
      pendingEntries,
      lastSeq: this.lastSeq,
      ackedSeq: this.cursor.ackedSeq,
      dropped: this.dropped,
      overflowing: this.overflowing,
      damagedLines: this.damagedLines,
      writeError: this.writeError,
    };
  }

  /** Writes and syncs what is queued, then closes the files (shutdown). */
  async close(): Promise<void> {
    if (this.closed) return;
    await this.synced();
    this.writePending();
    if (this.syncTimer !== null) clearTimeout(this.syncTimer);
    for (const segment of this.segments) {
      if (segment.dirty) segment.syncNow();
      segment.close();
    }
    this.closed = true;
    try {
      this.seqFile.close(this.lastSeq);
    } catch (error) {
      this.logger.error({ err: error, lastSeq: this.lastSeq }, `could not record the last audit number in ${SEQ_FILE}: a restart may reuse numbers of dropped entries`);
    }
    await this.cursor.close();
    for (const group of this.awaitingSync) group.resolve();
    this.awaitingSync = [];
  }

  /** Bytes in the segment files. */
  private fileBytes(): number {
    let bytes = 0;
    for (const segment of this.segments) bytes += segment.size;
    return bytes;
  }

  private get current(): WalSegment {
    return this.segments[this.segments.length - 1];
  }

  private serialize(seq: number, entry: AuditRecord): string {
    const input = this.clean.serialize(compactInput(entry.input)) ?? 'null';
    return walLine(seq, entry, input.length <= MAX_INPUT_CHARS ? input : `{"truncated":true,"jsonChars":${input.length}}`, this.clean);
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
      this.logger.error({ seq, maxBytes: this.maxBytes, fileBytes: this.fileBytes(), err: error }, `${why}: audit entries are being dropped until the gateway acknowledges some`);
    }
    this.keepNumber(seq);
  }

  /**
   * A number used without a line on disk must survive a restart, so that the gateway sees a gap
   * rather than a later entry under the same number, which it would skip as one it has.
   */
  private keepNumber(seq: number): void {
    try {
      this.seqFile.use(seq);
    } catch (error) {
      this.logger.error({ err: error, seq }, `could not record the used audit number in ${SEQ_FILE}: a restart may reuse it`);
    }
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
    if (this.pendingSeqs.length === 0 || this.closed) return;
    const seqs = this.pendingSeqs;
    const awaited = this.openGroup !== null;
    const group = this.openGroup ?? makeGroup();
    let failure: unknown = null;
    try {
      this.segmentFor(seqs[0]).append(this.staging, this.stagedBytes, seqs, this.pendingEnds);
    } catch (error) {
      failure = error;
    }
    this.pendingSeqs = [];
    this.pendingEnds = [];
    this.openGroup = null;
    this.stagedBytes = 0;
    if (this.staging.length > STAGING_BYTES * 4) this.staging = Buffer.allocUnsafe(STAGING_BYTES);
    this.written(seqs, group, awaited, failure);
  };

  /** The segment to append to: a new one, from line `firstSeq` on, once the current one is full. */
  private segmentFor(firstSeq: number): WalSegment {
    if (this.current.size < this.segmentBytes) return this.current;
    try {
      this.segments.push(WalSegment.create(this.dir, firstSeq));
      this.directoryChanged = true;
    } catch (error) {
      // The current segment grows on; the bound still holds.
      this.logger.error({ err: error }, 'could not start a new audit buffer segment');
    }
    return this.current;
  }

  private written(seqs: number[], group: SyncGroup, awaited: boolean, error: unknown): void {
    if (error) return this.writeFailed(seqs, awaited ? group : null, error);
    if (this.writeError !== null) {
      this.logger.warn({ resumedAtSeq: seqs[0] }, 'audit entries are written to the buffer file again');
      this.writeError = null;
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
   * A full or failing disk: the entries are counted as dropped and their numbers kept (a gap at
   * the gateway), /health says why, and their answers get a 503 rather than a success the
   * trail will never show (docs/sidecar.md "Configuration", AUDIT_DURABILITY).
   */
  private writeFailed(seqs: number[], group: SyncGroup | null, error: unknown): void {
    this.dropped += seqs.length;
    const reason = `audit entries could not be written to the buffer file: ${(error as Error).message}`;
    if (this.writeError === null) this.logger.error({ err: error, entries: seqs.length, firstSeq: seqs[0] }, reason);
    this.writeError = (error as Error).message;
    this.keepNumber(seqs.at(-1)!);
    group?.reject(new AppError(ErrorCode.ServiceUnavailable, reason, { decision: 'deny', reason }));
  }

  /**
   * Starts the next round of fdatasync: at once when answers wait for it (`sync`); in the
   * background (`write`) at most every BACKGROUND_SYNC_MS, so that a fast disk does not turn
   * every few requests into a sync and its thread hand-off.
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

  /** Syncs every segment written since its last sync, and the directory once a segment was created. */
  private startSync(): void {
    if (this.syncing || this.awaitingSync.length === 0 || this.closed) return;
    const groups = this.awaitingSync;
    this.awaitingSync = [];
    this.syncing = true;
    this.lastSyncStart = performance.now();
    this.inSync = groups.at(-1)!;
    const upTo = groups.at(-1)!.seq ?? this.syncedSeq;
    const dirty = this.segments.filter((segment) => segment.dirty);
    const withDirectory = this.directoryChanged;
    for (const segment of dirty) segment.dirty = false;
    this.directoryChanged = false;
    let left = dirty.length + (withDirectory ? 1 : 0);
    let failure: Error | null = null;
    const done = (error: Error | null): void => {
      failure ??= error;
      if (--left > 0) return;
      this.syncing = false;
      this.inSync = null;
      if (failure) this.logger.error({ err: failure }, 'audit buffer fdatasync failed');
      this.syncedSeq = Math.max(this.syncedSeq, upTo);
      for (const group of groups) group.resolve();
      this.scheduleSync();
      this.release();
    };
    if (left === 0) return done(null);
    for (const segment of dirty) segment.sync(done);
    if (withDirectory) syncDirectoryInBackground(this.dir, done);
  }

  /**
   * Deletes the oldest segments once all their lines are acknowledged, and empties the current
   * one when it is the only one and so. Not while a sync runs: it may be using their files.
   */
  private release(): void {
    if (this.syncing || this.closed) return;
    while (this.segments.length > 1 && this.segments[0].unacknowledged === 0) this.segments.shift()!.remove();
    const only = this.segments[0];
    if (this.segments.length === 1 && only.unacknowledged === 0 && only.size > 0) only.truncate();
  }

  private recover(): void {
    const recovered = recoverWal(this.dir, ACKED_FILE, this.seqFile, this.logger);
    this.cursor = new WalForwardCursor(recovered.ackFile, recovered.ackedSeq);
    this.segments = recovered.segments;
    this.lastSeq = recovered.lastSeq;
    this.syncedSeq = recovered.syncedSeq;
    this.damagedLines = recovered.damagedLines;
    this.release();
  }
}

function makeGroup(seq?: number): SyncGroup {
  let resolve!: () => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<void>((done, fail) => {
    resolve = done;
    reject = fail;
  });
  return { promise, resolve, reject, seq };
}

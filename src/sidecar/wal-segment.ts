import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { writeFileAtomic } from './atomic-file';

const SEQ_LINE = /^\{"seq":(\d+),/;
/** `audit-<first seq>.wal`; `audit.wal` is the single file of versions before segments, older than any. */
const SEGMENT_NAME = /^audit(?:-(\d+))?\.wal$/;
const NEWLINE = 0x0a;

/**
 * One file of the sidecar's audit write-ahead log: JSON lines `{"seq":N,...}` appended in order,
 * named after the number of its first line (`audit-0000000000000123.wal`). The numbers and end
 * offsets of its lines are kept in memory, so a batch is one read; and acknowledged lines are
 * never copied: the log deletes a segment once every line in it is acknowledged.
 */
export class WalSegment {
  /** Number and end offset of each line, in file order. */
  readonly seqs: number[] = [];
  readonly ends: number[] = [];
  /** Index of the first unacknowledged line. */
  head = 0;
  /** Bytes in the file. */
  size = 0;
  /** Whether lines were written since the last fdatasync of this file began. */
  dirty = false;
  /** Damaged lines found by `recover`, moved out of the file. */
  damagedLines = 0;
  /** The highest number a damaged line still shows: used, so never given again. */
  damagedSeq = 0;

  private constructor(
    readonly file: string,
    private fd: number,
  ) {}

  /** Creates the segment whose first line will be number `firstSeq`. */
  static create(dir: string, firstSeq: number): WalSegment {
    const file = path.join(dir, `audit-${String(firstSeq).padStart(16, '0')}.wal`);
    return new WalSegment(file, fs.openSync(file, 'wx+', 0o600));
  }

  /** The segment files in `dir`, oldest first. */
  static list(dir: string): string[] {
    const numbered = fs
      .readdirSync(dir)
      .map((name) => ({ name, match: SEGMENT_NAME.exec(name) }))
      .filter((entry): entry is { name: string; match: RegExpExecArray } => entry.match !== null)
      .map(({ name, match }) => ({ name, first: match[1] === undefined ? 0 : Number(match[1]) }));
    return numbered.sort((a, b) => a.first - b.first).map(({ name }) => path.join(dir, name));
  }

  /**
   * Opens an existing segment, indexing its lines. A last line without its newline is torn (a
   * kill mid-write) and cut off. A damaged line that has its newline is not a torn write and the
   * lines after it are valid entries: the damaged ones are moved to `<file>.damaged` (the file
   * is rewritten without them, atomically) and never forwarded, so their numbers show as a gap
   * at the gateway.
   */
  static recover(file: string, logger: Logger): WalSegment {
    const scan = scanLines(fs.readFileSync(file));
    if (scan.damaged.length > 0) WalSegment.setAside(file, scan, logger);
    const segment = new WalSegment(file, fs.openSync(file, 'r+'));
    let offset = 0;
    for (const line of scan.good) {
      offset += line.bytes.length;
      segment.seqs.push(line.seq);
      segment.ends.push(offset);
    }
    if (scan.damaged.length === 0 && scan.tornBytes > 0) {
      logger.warn({ file, keptBytes: offset, cutBytes: scan.tornBytes }, 'audit buffer ended in a torn line (the process was killed mid-write); cut it off');
      fs.ftruncateSync(segment.fd, offset);
    }
    segment.size = offset;
    segment.damagedLines = scan.damaged.length;
    segment.damagedSeq = Math.max(0, ...scan.damaged.map(claimedSeq));
    return segment;
  }

  private static setAside(file: string, scan: LineScan, logger: Logger): void {
    fs.appendFileSync(`${file}.damaged`, Buffer.concat(scan.damaged), { mode: 0o600 });
    writeFileAtomic(file, Buffer.concat(scan.good.map((line) => line.bytes)));
    logger.error(
      { file, damagedLines: scan.damaged.length, keptLines: scan.good.length, cutBytes: scan.tornBytes, movedTo: `${file}.damaged` },
      'audit buffer segment held damaged lines: moved them aside and kept the valid lines after them; their numbers will show as a gap at the gateway',
    );
  }

  /** Offset of the first unacknowledged line. */
  get start(): number {
    return this.head === 0 ? 0 : this.ends[this.head - 1];
  }

  /** Lines written and not yet acknowledged. */
  get unacknowledged(): number {
    return this.seqs.length - this.head;
  }

  /** Number of the last line, 0 when empty. */
  get lastSeq(): number {
    return this.seqs.at(-1) ?? 0;
  }

  /** Appends the first `length` bytes of `data`: lines numbered `seqs`, ending at `ends` within `data`. Throws when the write fails (nothing is indexed then). */
  append(data: Buffer, length: number, seqs: readonly number[], ends: readonly number[]): void {
    const position = this.size;
    let done = 0;
    // pwrite(2) until all of it is in the file (a regular file rarely takes less). After a failure
    // the next write starts at `position` again, over whatever part of this one landed.
    while (done < length) done += fs.writeSync(this.fd, data, done, length - done, position + done);
    this.size += length;
    this.dirty = true;
    for (let index = 0; index < seqs.length; index++) {
      this.seqs.push(seqs[index]);
      this.ends.push(position + ends[index]);
    }
  }

  /** Marks the lines up to number `seq` acknowledged. */
  acknowledge(seq: number): void {
    while (this.head < this.seqs.length && this.seqs[this.head] <= seq) this.head++;
  }

  /** Lines `from` to `to` (indexes, `to` exclusive) as they are on disk, their newlines turned into `separator`. */
  read(from: number, to: number, separator: number): Buffer {
    const start = from === 0 ? 0 : this.ends[from - 1];
    const length = this.ends[to - 1] - start - 1;
    const lines = Buffer.allocUnsafe(length);
    fs.readSync(this.fd, lines, 0, length, start);
    for (let index = from; index < to - 1; index++) lines[this.ends[index] - 1 - start] = separator;
    return lines;
  }

  /** Empties the file (every line acknowledged), keeping it open for more. */
  truncate(): void {
    fs.ftruncateSync(this.fd, 0);
    this.seqs.length = 0;
    this.ends.length = 0;
    this.head = 0;
    this.size = 0;
  }

  /** fdatasync(2) in libuv's thread pool. */
  sync(done: (error: Error | null) => void): void {
    fs.fdatasync(this.fd, done);
  }

  /** fdatasync(2) on this thread (shutdown). */
  syncNow(): void {
    fs.fdatasyncSync(this.fd);
  }

  close(): void {
    if (this.fd < 0) return;
    fs.closeSync(this.fd);
    this.fd = -1;
  }

  /** Closes and deletes the file. */
  remove(): void {
    this.close();
    fs.rmSync(this.file, { force: true });
  }
}

interface LineScan {
  /** Valid lines, their newline included. */
  good: Array<{ seq: number; bytes: Buffer }>;
  /** Complete (newline-terminated) lines that are not entries. */
  damaged: Buffer[];
  /** Bytes after the last newline. */
  tornBytes: number;
}

function scanLines(data: Buffer): LineScan {
  const scan: LineScan = { good: [], damaged: [], tornBytes: 0 };
  let offset = 0;
  while (offset < data.length) {
    const newline = data.indexOf(NEWLINE, offset);
    if (newline < 0) break;
    const bytes = data.subarray(offset, newline + 1);
    const seq = seqOf(data.subarray(offset, newline));
    if (seq === null) scan.damaged.push(bytes);
    else scan.good.push({ seq, bytes });
    offset = newline + 1;
  }
  scan.tornBytes = data.length - offset;
  return scan;
}

/** The line's number when it is a whole entry. */
function seqOf(line: Buffer): number | null {
  const seq = claimedSeq(line);
  return seq > 0 && isJson(line) ? seq : null;
}

/** The number at the start of a line, when it reads as one (a damaged line's too); 0 when not. */
function claimedSeq(line: Buffer): number {
  const match = SEQ_LINE.exec(line.subarray(0, 40).toString('utf8'));
  const seq = match === null ? 0 : Number(match[1]);
  return Number.isSafeInteger(seq) ? seq : 0;
}

function isJson(line: Buffer): boolean {
  try {
    JSON.parse(line.toString('utf8'));
    return true;
  } catch {
    return false;
  }
}

import fs from 'node:fs';
import path from 'node:path';
import { readFileIfExists, syncDirectory, writeFileAtomic } from './atomic-file';

/** Fixed width, so that an update in place never leaves digits of a longer earlier number behind. */
const WIDTH = 16;

/**
 * `audit.seq`: the highest sequence number used. The segments and `audit.acked` only know the
 * numbers that reached the disk as lines; numbers used by entries that did not (dropped past the
 * bound, a failed write) would otherwise be used again after a restart, and the gateway would
 * take the new entries for ones it has. So every such number is written here before the answer
 * of its decision leaves (one pwrite in place, no sync: it survives kill -9 like the lines do),
 * and at shutdown the last number used is written durably.
 */
export class SeqFile {
  private fd = -1;
  private writtenSeq = 0;

  constructor(private readonly file: string) {}

  /** The number the file holds, 0 when it does not exist; throws, naming the file, for anything but a safe integer. */
  read(): number {
    const text = readFileIfExists(this.file);
    return text === undefined ? 0 : parseSeq(text, this.file);
  }

  /** Makes `seq` survive a kill -9 (only numbers higher than the last one written cost a write). */
  use(seq: number): void {
    if (seq <= this.writtenSeq) return;
    if (this.fd < 0) {
      this.fd = fs.openSync(this.file, fs.constants.O_RDWR | fs.constants.O_CREAT, 0o600);
      syncDirectory(path.dirname(this.file));
    }
    fs.writeSync(this.fd, seqText(seq), 0);
    this.writtenSeq = seq;
  }

  /** Shutdown: `seq`, the last number used, made durable. */
  close(seq: number): void {
    if (this.fd >= 0) fs.closeSync(this.fd);
    this.fd = -1;
    writeFileAtomic(this.file, seqText(seq));
  }
}

function seqText(seq: number): string {
  return `${String(seq).padStart(WIDTH, '0')}\n`;
}

/** A sequence number read back from `file`; a damaged number must stop the start, not be guessed. */
export function parseSeq(text: string, file: string): number {
  const trimmed = text.trim();
  const seq = /^\d+$/.test(trimmed) ? Number(trimmed) : NaN;
  if (Number.isSafeInteger(seq)) return seq;
  throw new Error(
    `${file} holds ${JSON.stringify(trimmed.slice(0, 40))}, not a sequence number (a non-negative integer up to 2^53-1): ` +
      'refusing to start rather than reuse or invent audit sequence numbers; put the highest number this sidecar used in it',
  );
}

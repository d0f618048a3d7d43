import fs from 'node:fs';
import path from 'node:path';
import { crc32 } from 'node:zlib';
import { syncDirectory } from './atomic-file';
import { parseSeq } from './seq-file';

/** The slots sit in different 4 KiB blocks, so a torn write of one never touches the other. */
const SLOT_OFFSETS = [0, 4096];
const SLOT_BYTES = 32;
const SLOT = /^(\d+):(\d+) *\n/;
const LEGACY = /^(\d+)$/;
const FILE_BYTES = SLOT_OFFSETS[1] + SLOT_BYTES;

/**
 * The highest sequence number the gateway acknowledged, kept durable cheaply: two fixed slots
 * of `<seq>:<crc32 of seq>`, written in turn in place (pwrite, then fdatasync) on a file kept
 * open, so an acknowledgement costs two calls in libuv's thread pool instead of the eight of a
 * temporary file, fsync, rename and directory fsync. A reader takes the highest slot whose
 * checksum holds: a write torn by a power loss leaves the other slot, one acknowledgement
 * older, which only makes the sidecar send those entries again (the gateway ignores numbers it
 * has). Also reads the plain number earlier versions wrote.
 */
export class AckFile {
  /** The slot written next: never the one holding the latest number, which a torn write must leave. */
  private constructor(
    private readonly fd: number,
    private next: number,
  ) {}

  /**
   * Opens (creating) the file; the number it holds, 0 when it is new or empty. Throws, naming
   * the file, when it holds no valid number: guessing 0 would renumber the entries from 1.
   */
  static open(file: string): { ackFile: AckFile; ackedSeq: number } {
    const fd = fs.openSync(file, fs.constants.O_RDWR | fs.constants.O_CREAT, 0o600);
    try {
      return AckFile.read(file, fd);
    } catch (error) {
      fs.closeSync(fd);
      throw error;
    }
  }

  private static read(file: string, fd: number): { ackFile: AckFile; ackedSeq: number } {
    const data = Buffer.alloc(FILE_BYTES);
    const length = fs.readSync(fd, data, 0, data.length, 0);
    const head = data.toString('latin1', 0, Math.min(length, SLOT_BYTES)).trim();
    const legacy = LEGACY.test(head) ? parseSeq(head, file) : null;
    const [first, second] = SLOT_OFFSETS.map((offset) => slotValue(data, offset, file));
    const ackedSeq = legacy ?? Math.max(first ?? 0, second ?? 0);
    if (length > 0 && legacy === null && first === null && second === null) throw new Error(`${file} holds no valid acknowledged sequence number: ${damaged}`);
    const ackFile = new AckFile(fd, legacy !== null || (first ?? 0) > (second ?? 0) ? 1 : 0);
    if (length < FILE_BYTES) ackFile.preallocate(file, legacy === null ? [0, 1] : [1], ackedSeq);
    return { ackFile, ackedSeq };
  }

  /**
   * Writes `seq` into the slots now, so that the file has all its blocks before the first
   * acknowledgement: on a full disk acknowledging still works and lets the segments go.
   */
  private preallocate(file: string, slots: number[], seq: number): void {
    for (const index of slots) fs.writeSync(this.fd, slotText(seq), 0, SLOT_BYTES, SLOT_OFFSETS[index]);
    fs.fdatasyncSync(this.fd);
    syncDirectory(path.dirname(file));
  }

  /** Makes `seq` durable; one write at a time (the caller waits for `done`). */
  write(seq: number, done: (error: Error | null) => void): void {
    const slot = slotText(seq);
    const offset = SLOT_OFFSETS[this.next];
    this.next = 1 - this.next;
    fs.write(this.fd, slot, 0, SLOT_BYTES, offset, (error) => {
      if (error) return done(error);
      fs.fdatasync(this.fd, (syncError) => done(syncError));
    });
  }

  close(): void {
    fs.closeSync(this.fd);
  }
}

const damaged =
  'refusing to start rather than renumber audit entries from 1; put the highest number the gateway acknowledged in it ' +
  '(GET /admin/sidecars, lastSeq), or delete it when the audit-*.wal segments and audit.seq still show the numbers used';

function slotText(seq: number): Buffer {
  const slot = Buffer.alloc(SLOT_BYTES, 0x20);
  slot.write(`${seq}:${crc32(String(seq))}`);
  slot[SLOT_BYTES - 1] = 0x0a;
  return slot;
}

/** The slot's number; null when it holds none (never written, torn, or damaged). */
function slotValue(data: Buffer, offset: number, file: string): number | null {
  const match = SLOT.exec(data.toString('latin1', offset, offset + SLOT_BYTES));
  if (match === null || crc32(match[1]) !== Number(match[2])) return null;
  return parseSeq(match[1], file);
}

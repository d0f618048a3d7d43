import fs from 'node:fs';
import { crc32 } from 'node:zlib';

/** The slots sit in different 4 KiB blocks, so a torn write of one never touches the other. */
const SLOT_OFFSETS = [0, 4096];
const SLOT_BYTES = 32;
const SLOT = /^(\d+):(\d+) *\n/;
const LEGACY = /^(\d+)$/;

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

  /** Opens (creating) the file; the number it holds, 0 when none. */
  static open(file: string): { ackFile: AckFile; ackedSeq: number } {
    const fd = fs.openSync(file, fs.constants.O_RDWR | fs.constants.O_CREAT, 0o600);
    const data = Buffer.alloc(SLOT_OFFSETS[1] + SLOT_BYTES);
    const length = fs.readSync(fd, data, 0, data.length, 0);
    const legacy = LEGACY.exec(data.toString('latin1', 0, Math.min(length, SLOT_BYTES)).trim());
    if (legacy !== null) return { ackFile: new AckFile(fd, 1), ackedSeq: Number(legacy[1]) };
    const [first, second] = SLOT_OFFSETS.map((offset) => slotValue(data, offset));
    return { ackFile: new AckFile(fd, first > second ? 1 : 0), ackedSeq: Math.max(first, second) };
  }

  /** Makes `seq` durable; one write at a time (the caller waits for `done`). */
  write(seq: number, done: (error: Error | null) => void): void {
    const slot = Buffer.alloc(SLOT_BYTES, 0x20);
    const text = `${seq}:${crc32(String(seq))}`;
    slot.write(text);
    slot[SLOT_BYTES - 1] = 0x0a;
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

function slotValue(data: Buffer, offset: number): number {
  const match = SLOT.exec(data.toString('latin1', offset, offset + SLOT_BYTES));
  if (match === null || crc32(match[1]) !== Number(match[2])) return 0;
  return Number(match[1]);
}

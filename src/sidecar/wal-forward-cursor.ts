import type { AckFile } from './ack-file';
import type { WalSegment } from './wal-segment';

const COMMA = 0x2c;

/** A batch of entries to forward: their JSON objects joined by commas (a JSON array's inside), and their numbers. */
export interface WalBatch {
  entries: Buffer;
  count: number;
  firstSeq: number;
  lastSeq: number;
}

/**
 * Where forwarding to the gateway stands in the audit buffer: the highest number the gateway
 * acknowledged, kept in the ack file (one write at a time, in order), and the next batch after it.
 */
export class WalForwardCursor {
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly file: AckFile,
    private acked: number,
  ) {}

  get ackedSeq(): number {
    return this.acked;
  }

  /**
   * The oldest synced, unacknowledged entries: at most `maxEntries` and about `maxBytes`, from
   * one segment.
   */
  next(segments: readonly WalSegment[], syncedSeq: number, maxEntries: number, maxBytes: number): WalBatch | null {
    const segment = segments.find((candidate) => candidate.unacknowledged > 0);
    if (segment === undefined) return null;
    const { head, seqs, ends, start } = segment;
    let end = head;
    while (end < seqs.length && end - head < maxEntries && seqs[end] <= syncedSeq) {
      if (end > head && ends[end] - start > maxBytes) break;
      end++;
    }
    if (end === head) return null;
    // The lines as they are on disk, their newlines turned into the commas of a JSON array.
    return { entries: segment.read(head, end, COMMA), count: end - head, firstSeq: seqs[head], lastSeq: seqs[end - 1] };
  }

  /**
   * Records that the gateway has every entry up to `seq` (off the event loop, after any earlier
   * acknowledgement); true when the cursor moved, so those entries may leave the disk.
   */
  async advance(seq: number, stopped: () => boolean): Promise<boolean> {
    if (seq <= this.acked || stopped()) return false;
    const write = this.writing.catch(() => undefined).then(() => this.persist(seq));
    this.writing = write;
    await write;
    if (seq <= this.acked || stopped()) return false;
    this.acked = seq;
    return true;
  }

  /** Waits for the last acknowledgement's write, then closes the file (shutdown). */
  async close(): Promise<void> {
    await this.writing.catch(() => undefined);
    this.file.close();
  }

  private persist(seq: number): Promise<void> {
    return new Promise((resolve, reject) => this.file.write(seq, (error) => (error ? reject(error) : resolve())));
  }
}

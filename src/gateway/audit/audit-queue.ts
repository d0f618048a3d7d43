import type { QueuedAudit } from '../../core/audit-record/audit-record';

/** First capacity of a batch's buffer; it doubles as entries come. */
const INITIAL_BYTES = 64 * 1024;
/** A batch closes at this size even below the entry limit (one entry alone may exceed it). */
const MAX_BATCH_BYTES = 16 * 1024 * 1024;
const NEWLINE = 0x0a;

/**
 * A batch of queued records: their UTF-8 text, one line each (a queued record holds no raw
 * newline: its texts are in COPY text format, its payloads JSON).
 */
export interface QueuedBatch {
  /** The lines, each ending with `\n`. */
  readonly lines: Uint8Array;
  readonly count: number;
}

/** Records as one batch, encoded as the queue encodes its own (for writes that bypass the queue). */
export function recordsBatch(records: readonly QueuedAudit[]): QueuedBatch {
  return { lines: Buffer.from(`${records.join('\n')}\n`), count: records.length };
}

/** The records of a batch as strings (the inverse of the queue's encoding). */
export function batchRecords(lines: Uint8Array): QueuedAudit[] {
  if (lines.byteLength === 0) return [];
  const text = Buffer.from(lines.buffer, lines.byteOffset, lines.byteLength - 1).toString('utf8');
  return text.split('\n');
}

/**
 * The AuditWriter's queue, in batches of at most `batchSize` entries, oldest first. Each record
 * is written as UTF-8 into its batch's buffer, outside the JavaScript heap: a queued entry
 * survives several young-generation collections before it is written, and as a string each of
 * them would copy it, then promote it to the old generation for the major collector to mark.
 * Handing a batch to the audit worker copies one block of bytes.
 */
export class AuditQueue {
  private readonly batches: OpenBatch[] = [];
  /** The batch taking new entries; null once the head is taken for writing. */
  private tail: OpenBatch | null = null;
  private size = 0;
  /** The buffer of the last batch written, for the next batch: steady traffic allocates none. */
  private spare: Buffer | null = null;

  constructor(private readonly batchSize: number) {}

  /** Entries queued. */
  get length(): number {
    return this.size;
  }

  /** When the oldest entry still queued was queued (performance.now()); null when empty. */
  get oldestQueuedAtMs(): number | null {
    return this.batches[0]?.queuedAtMs ?? null;
  }

  /** Whether a whole batch is waiting (so the next write need not wait for the flush interval). */
  get hasFullBatch(): boolean {
    return this.batches.length > 1 || (this.batches.length === 1 && this.batches[0].count >= this.batchSize);
  }

  push(record: QueuedAudit): void {
    // UTF-8 takes at most three bytes per UTF-16 unit, and one for the newline.
    const most = record.length * 3 + 1;
    let batch = this.tail;
    if (batch === null || batch.count >= this.batchSize || (batch.count > 0 && batch.used + most > MAX_BATCH_BYTES)) batch = this.open(most);
    else if (batch.used + most > batch.bytes.length) grow(batch, most);
    batch.used += batch.bytes.write(record, batch.used);
    batch.bytes[batch.used++] = NEWLINE;
    batch.count++;
    this.size++;
  }

  /** The oldest batch, closed to new entries so what is written is what gets removed; undefined when empty. */
  head(): QueuedBatch | undefined {
    const batch = this.batches[0];
    if (batch === undefined) return undefined;
    if (batch === this.tail) this.tail = null;
    return { lines: batch.bytes.subarray(0, batch.used), count: batch.count };
  }

  /** Drops the oldest batch, once written: its `lines` are not to be read after this. */
  shift(): void {
    const batch = this.batches.shift();
    if (batch === undefined) return;
    if (batch === this.tail) this.tail = null;
    this.size -= batch.count;
    if (batch.bytes.length <= MAX_BATCH_BYTES) this.spare = batch.bytes;
  }

  private open(most: number): OpenBatch {
    const spare = this.spare;
    this.spare = null;
    const bytes = spare !== null && spare.length >= most ? spare : Buffer.allocUnsafeSlow(Math.max(INITIAL_BYTES, most));
    const batch = { bytes, used: 0, count: 0, queuedAtMs: performance.now() };
    this.batches.push(batch);
    this.tail = batch;
    return batch;
  }
}

interface OpenBatch {
  bytes: Buffer;
  used: number;
  count: number;
  /** When its first entry was queued (performance.now()): the age of the oldest entry it holds. */
  readonly queuedAtMs: number;
}

function grow(batch: OpenBatch, most: number): void {
  const bytes = Buffer.allocUnsafeSlow(Math.max(batch.bytes.length * 2, batch.used + most));
  batch.bytes.copy(bytes, 0, 0, batch.used);
  batch.bytes = bytes;
}

import path from 'node:path';
import type { Logger } from 'pino';
import { AckFile } from './ack-file';
import { SeqFile } from './seq-file';
import { WalSegment } from './wal-segment';

/** What a previous run left in the audit buffer's directory. */
export interface RecoveredWal {
  ackFile: AckFile;
  /** The highest number the gateway acknowledged. */
  ackedSeq: number;
  /** The segments, oldest first, their acknowledged lines skipped; at least one. */
  segments: WalSegment[];
  /** The highest number used, lines dropped or damaged included: new entries number on from it. */
  lastSeq: number;
  /** The highest number on disk: every line found is synced. */
  syncedSeq: number;
  /** Damaged lines found (moved to `<segment>.damaged`). */
  damagedLines: number;
}

/**
 * Reads back the audit buffer (AuditWal) at start: the acknowledgement, the numbers used, and
 * each segment, a torn last line cut off and damaged lines set aside. Numbers never go back, so
 * the gateway sees a gap, never a duplicate, for what a crash lost.
 */
export function recoverWal(dir: string, ackedFile: string, seqFile: SeqFile, logger: Logger): RecoveredWal {
  const acked = AckFile.open(path.join(dir, ackedFile));
  const usedSeq = seqFile.read();
  const segments = WalSegment.list(dir).map((file) => WalSegment.recover(file, logger));
  let onDisk = 0;
  let damagedSeq = 0;
  let damagedLines = 0;
  for (const segment of segments) {
    onDisk = Math.max(onDisk, segment.lastSeq);
    damagedSeq = Math.max(damagedSeq, segment.damagedSeq);
    damagedLines += segment.damagedLines;
    segment.acknowledge(acked.ackedSeq);
  }
  const lastSeq = Math.max(acked.ackedSeq, usedSeq, onDisk, damagedSeq);
  if (segments.length === 0) segments.push(WalSegment.create(dir, lastSeq + 1));
  const unacknowledged = segments.reduce((sum, segment) => sum + segment.unacknowledged, 0);
  if (unacknowledged > 0) logger.info({ entries: unacknowledged, to: onDisk }, 'audit entries buffered by a previous run will be forwarded');
  return { ackFile: acked.ackFile, ackedSeq: acked.ackedSeq, segments, lastSeq, syncedSeq: onDisk, damagedLines };
}

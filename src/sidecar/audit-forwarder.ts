import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import type { Logger } from 'pino';
import { SidecarConfig } from './sidecar-config';
import { LOGGER } from '../core/logging/logging.module';
import { AuditWal } from './audit-wal';
import { GatewayLink } from './gateway-link';
import { BucketHistogram } from '../core/telemetry/bucket-histogram';

/** Entries and bytes per ingest request: well under the gateway's 1 MiB JSON limit. */
const BATCH_ENTRIES = 500;
const BATCH_BYTES = 512 * 1024;
/** The byte budget a 413 halves no further (a batch always holds at least one entry). */
const MIN_BATCH_BYTES = 1024;
const MAX_BACKOFF_MS = 10_000;
const CLOSING = Buffer.from(']}');
/** Seconds an ingest request takes: milliseconds while the gateway keeps up, up to the link's 10 s timeout. */
const FORWARD_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * Sends the buffered audit entries to the gateway (`POST /api/v1/audit/ingest`) in order, one
 * batch at a time, and acknowledges them in the buffer once the gateway has answered 200. The
 * gateway ignores numbers it already has, so a batch resent after a lost answer arrives once.
 */
@Injectable()
export class AuditForwarder implements OnApplicationBootstrap, OnApplicationShutdown {
  lastError: string | null = null;
  lastForwardMs: number | null = null;
  /** How long each batch took to send and be answered, and how many batches and entries were refused or taken (the sidecar's metrics). */
  readonly forwardSeconds = new BucketHistogram(FORWARD_BUCKETS);
  forwardFailures = 0;
  forwardedEntries = 0;
  private timer: NodeJS.Timeout | null = null;
  private running = false;
  private backoffMs = 0;
  private stopped = false;
  /** Halved by each 413: a gateway with a smaller MAX_JSON_BYTES still takes every entry. */
  private batchBytes = BATCH_BYTES;
  /** The ingest body up to its entries. */
  private readonly opening: Buffer;

  constructor(
    private readonly config: SidecarConfig,
    private readonly wal: AuditWal,
    private readonly link: GatewayLink,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.opening = Buffer.from(`{"sidecarId":${JSON.stringify(link.sidecarId)},"entries":[`);
  }

  onApplicationBootstrap(): void {
    this.later(this.config.auditForwardIntervalMs);
  }

  onApplicationShutdown(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.link.close();
  }

  /** Forward now (the gateway just answered a bundle fetch). */
  nudge(): void {
    this.backoffMs = 0;
    if (!this.running) this.later(0);
  }

  private later(delayMs: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.run(), delayMs);
    this.timer.unref();
  }

  private async run(): Promise<void> {
    this.timer = null;
    if (this.running) return;
    this.running = true;
    try {
      while (!this.stopped && (await this.forwardOne()));
    } catch (error) {
      // The acknowledgement could not be made durable: the batch is sent again later (the gateway skips what it has).
      this.lastError = `audit acknowledgement failed: ${(error as Error).message}`;
      this.logger.error({ err: error }, 'audit acknowledgement could not be written; will retry');
      this.backoffMs = Math.min(MAX_BACKOFF_MS, Math.max(500, this.backoffMs * 2));
    } finally {
      this.running = false;
    }
    this.later(this.backoffMs > 0 ? this.backoffMs : this.config.auditForwardIntervalMs);
  }

  /** Sends one batch; true when there may be more to send right away. */
  private async forwardOne(): Promise<boolean> {
    const batch = this.wal.batch(BATCH_ENTRIES, this.batchBytes);
    if (batch === null) return false;
    const started = performance.now();
    const answer = await this.link.post('/api/v1/audit/ingest', [this.opening, batch.entries, CLOSING]);
    this.forwardSeconds.observe((performance.now() - started) / 1000);
    if (answer !== 'unreachable' && answer.status === 413 && batch.count > 1) {
      this.batchBytes = Math.max(MIN_BATCH_BYTES, Math.floor(Math.min(this.batchBytes, batch.entries.length) / 2));
      this.logger.warn({ entries: batch.count, bytes: batch.entries.length, nextBatchBytes: this.batchBytes }, 'the gateway refused an audit batch as too large; sending smaller batches');
      return true;
    }
    if (answer === 'unreachable' || answer.status !== 200) {
      this.forwardFailures++;
      this.lastError = answer === 'unreachable' ? 'gateway unreachable' : `gateway answered ${answer.status}: ${answer.text.slice(0, 200)}`;
      if (answer !== 'unreachable') this.logger.error({ status: answer.status, firstSeq: batch.firstSeq, lastSeq: batch.lastSeq }, 'audit batch refused by the gateway; will retry');
      this.backoffMs = Math.min(MAX_BACKOFF_MS, Math.max(500, this.backoffMs * 2));
      return false;
    }
    await this.wal.acknowledge(batch.lastSeq);
    this.forwardedEntries += batch.count;
    this.lastError = null;
    this.lastForwardMs = Date.now();
    this.backoffMs = 0;
    this.logger.debug({ firstSeq: batch.firstSeq, lastSeq: batch.lastSeq }, 'audit batch forwarded');
    return true;
  }
}

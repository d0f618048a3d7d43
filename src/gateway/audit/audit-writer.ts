import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Logger } from 'pino';
import { AppConfig } from '../../core/config/app-config';
import { DatabaseConnection } from '../database/database-connection';
import { LOGGER } from '../../core/logging/logging.module';
import { AppError } from '../../core/common/app-error';
import { ErrorCode } from '../../core/common/error-code';
import { AuditQueue, QueuedBatch, recordsBatch } from './audit-queue';
import { AuditRecord, queuedAudit } from '../../core/audit-record/audit-record';
import { AuditSanitizer } from '../../core/audit-record/audit-sanitizer';
import { AuditSink, InProcessAuditSink, WorkerAuditSink } from './audit-sink';
import { atTurnEnd } from '../../core/common/turn-end';
import { BucketHistogram } from '../../core/telemetry/bucket-histogram';

const RETRY_MIN_MS = 100;
const RETRY_MAX_MS = 5000;
const SHUTDOWN_DRAIN_MS = 15_000;
/** Seconds a batch write takes: about a millisecond for a small batch, far more while the database struggles. */
const WRITE_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * Writes audit entries off the request path: callers enqueue plain records (cleaned and
 * serialised into the queue at the end of the event loop's turn, see `record`), and one flush
 * at a time hands a batch to the sink, which
 * writes it with one COPY (one INSERT on the embedded database) inside a transaction that
 * extends each organization's hash chain (AuditBatchStore) — in a worker thread on PostgreSQL,
 * in this thread on the embedded database. The queue is bounded: past AUDIT_QUEUE_MAX,
 * `whenWritable` makes new requests wait instead of dropping entries. A failed write is retried
 * with backoff (100 ms doubling to 5 s), keeping the batch at the head of the queue; the retry
 * keeps its time whatever arrives meanwhile (see `flushSoon`). Shutdown drains the queue.
 *
 * What a kill -9 can lose: entries still in memory, i.e. while the database keeps up at most
 * AUDIT_FLUSH_MS of traffic plus the batch in flight, and never more than AUDIT_QUEUE_MAX
 * entries. `lag` tells how far behind the trail is; /health reports it, and degrades past
 * AUDIT_LAG_MAX_MS.
 */
@Injectable()
export class AuditWriter implements OnApplicationShutdown {
  private readonly queue: AuditQueue;
  /** Entries recorded in this turn of the event loop, not yet queued (see `record`). */
  private arrivals: AuditRecord[] = [];
  private readonly sink: AuditSink;
  private readonly clean: AuditSanitizer;
  private readonly waiters: Array<() => void> = [];
  private timer: NodeJS.Timeout | null = null;
  /** When the armed `timer` fires (performance.now()). */
  private timerDueMs = 0;
  private flushing: Promise<void> | null = null;
  /** The backoff after the last failed write; 0 once a write succeeds. */
  private retryMs = 0;
  /** No write before this (performance.now()) after a failure: when the retry is due. */
  private retryAtMs = 0;
  /** When a write last failed (Date.now()); null if none has since start. */
  private lastFailureMs: number | null = null;
  private written = 0;
  private stripPayloads = false;
  private closed = false;
  /** How long each batch write took, failed or not (the gateway's metrics). */
  readonly writeSeconds = new BucketHistogram(WRITE_BUCKETS);
  /** Batch writes that failed since start (each is retried, or answered 503 for an ingest). */
  writeFailures = 0;

  constructor(
    private readonly config: AppConfig,
    @InjectDataSource() dataSource: DataSource,
    connection: DatabaseConnection,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.clean = new AuditSanitizer(config.audit.redact);
    this.queue = new AuditQueue(config.audit.batchSize);
    this.sink = connection.embedded
      ? new InProcessAuditSink(dataSource)
      : new WorkerAuditSink({ databaseUrl: connection.url }, logger);
  }

  /**
   * Enqueues an entry; never blocks and never drops it. Its objects are read (cleaned, redacted
   * and serialised) at the end of this turn of the event loop, with the turn's other entries,
   * so the caller must not change them afterwards. Serialising the turn's entries in one run,
   * rather than each between the socket writes of its request, saves the request thread 2.5 µs
   * and the load generator 2.6 µs per proxied request (docs/architecture.md, "The audit pipeline").
   */
  record(entry: AuditRecord): void {
    if (this.refused(entry)) return;
    this.arrivals.push(entry);
    if (this.arrivals.length === 1) atTurnEnd(this.queueArrivals);
  }

  /** The same, its objects read at once: for entries built from values that may change later. */
  recordNow(entry: AuditRecord): void {
    if (this.refused(entry)) return;
    this.queueArrivals();
    this.queue.push(queuedAudit(entry, this.clean));
    this.scheduleFlush();
  }

  /**
   * Writes entries that may reach several instances at the same time (a sidecar's batch, resent
   * while the first attempt is still writing) once each: in one transaction of their own, which
   * leaves out those the trail already holds under the same organization, time and id (see
   * AuditBatchStore). Resolves, once committed, to the ids it wrote; those left out were written
   * by another attempt. Not queued: a failure rejects (503), and the caller's client retries.
   */
  async writeOnce(entries: ReadonlyArray<AuditRecord & { id: string }>): Promise<Set<string>> {
    if (entries.length === 0) return new Set();
    if (this.closed) throw new AppError(ErrorCode.ServiceUnavailable, 'The gateway is shutting down; try again shortly');
    const batch = recordsBatch(entries.map((entry) => queuedAudit(entry, this.clean)));
    let present: string[];
    const started = performance.now();
    try {
      present = await this.sink.write(batch, false, true);
      this.writeSeconds.observe((performance.now() - started) / 1000);
    } catch (error) {
      this.writeSeconds.observe((performance.now() - started) / 1000);
      this.writeFailures++;
      present = await this.writeOnceStripped(batch, error);
    }
    this.written += entries.length - present.length;
    const skipped = new Set(present);
    return new Set(entries.map((entry) => entry.id).filter((id) => !skipped.has(id)));
  }

  /** A batch the database refused (`error`) written again without payloads, as the queue's retries do; else a 503. */
  private async writeOnceStripped(batch: QueuedBatch, error: unknown): Promise<string[]> {
    let failure = error;
    if (isDataError(error)) {
      try {
        return await this.sink.write(batch, true, true);
      } catch (retryError) {
        failure = retryError;
      }
    }
    this.logger.error({ err: failure, entries: batch.count }, 'audit entries not written');
    throw new AppError(ErrorCode.ServiceUnavailable, 'The audit trail could not be written; try again shortly');
  }

  /** Undefined while the queue has room; else a promise that resolves when it has. */
  whenWritable(): Promise<void> | undefined {
    if (this.queue.length < this.config.audit.queueMax) return undefined;
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Entries waiting to be written. */
  get pending(): number {
    return this.queue.length + this.arrivals.length;
  }

  /** How far behind the trail is (GET /health). */
  lag(): AuditLag {
    const oldest = this.queue.oldestQueuedAtMs ?? (this.arrivals.length > 0 ? performance.now() : null);
    return {
      pending: this.pending,
      oldestUnwrittenMs: oldest === null ? null : Math.round(performance.now() - oldest),
      lastFailureMs: this.lastFailureMs,
    };
  }

  /** Entries written since start. */
  get writtenCount(): number {
    return this.written;
  }

  /** Writes everything queued so far (and anything queued meanwhile), until `deadlineMs`. */
  async drain(deadlineMs = Number.POSITIVE_INFINITY): Promise<void> {
    for (;;) {
      this.queueArrivals();
      if ((this.queue.length === 0 && !this.flushing) || Date.now() >= deadlineMs) return;
      if (this.flushing) {
        await this.flushing;
        continue;
      }
      await this.flush();
      if (this.retryMs > 0) await sleep(Math.min(this.retryMs, deadlineMs - Date.now()));
    }
  }

  async onApplicationShutdown(): Promise<void> {
    await this.drain(Date.now() + SHUTDOWN_DRAIN_MS);
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    await this.sink.close();
    if (this.queue.length > 0) this.logger.error({ lost: this.queue.length }, 'audit queue not drained before shutdown: the database is unreachable');
  }

  private refused(entry: AuditRecord): boolean {
    if (!this.closed) return false;
    this.logger.error({ action: entry.action, traceId: entry.traceId }, 'audit entry recorded after shutdown: not written');
    return true;
  }

  /** Queues the entries recorded so far in this turn of the event loop, in order. */
  private readonly queueArrivals = (): void => {
    if (this.arrivals.length === 0) return;
    const arrivals = this.arrivals;
    this.arrivals = [];
    for (const entry of arrivals) this.queue.push(queuedAudit(entry, this.clean));
    this.scheduleFlush();
  };

  private scheduleFlush(): void {
    if (this.queue.hasFullBatch) this.flushSoon(0);
    else this.flushSoon(this.config.audit.flushMs);
  }

  /**
   * Arms the next write in `delayMs`, and never before a pending retry is due. An armed timer is
   * only ever brought forward, never put back: under steady traffic every turn queues entries
   * and calls this, and a timer re-armed each time would never fire: a retry put back by every
   * arrival once left the trail unwritten for as long as the traffic lasted.
   */
  private flushSoon(delayMs: number): void {
    if (this.flushing) return;
    const now = performance.now();
    const dueMs = Math.max(now + delayMs, this.retryAtMs);
    if (this.timer !== null && this.timerDueMs <= dueMs) return;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timerDueMs = dueMs;
    // Never what keeps the process alive: shutdown drains the queue explicitly.
    this.timer = setTimeout(() => void this.flush(), dueMs - now);
    this.timer.unref();
  }

  private flush(): Promise<void> {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    if (this.flushing) return this.flushing;
    this.flushing = this.flushBatch().finally(() => {
      this.flushing = null;
      this.releaseWaiters();
      if (this.queue.length > 0) this.flushSoon(this.queue.hasFullBatch ? 0 : this.config.audit.flushMs);
    });
    return this.flushing;
  }

  private async flushBatch(): Promise<void> {
    const batch = this.queue.head();
    if (batch === undefined) return;
    const started = performance.now();
    try {
      await this.sink.write(batch, this.stripPayloads);
      this.writeSeconds.observe((performance.now() - started) / 1000);
      this.queue.shift();
      this.written += batch.count;
      this.retryMs = 0;
      this.retryAtMs = 0;
      this.stripPayloads = false;
    } catch (error) {
      this.writeSeconds.observe((performance.now() - started) / 1000);
      this.writeFailures++;
      this.retryMs = Math.min(RETRY_MAX_MS, Math.max(RETRY_MIN_MS, this.retryMs * 2));
      this.retryAtMs = performance.now() + this.retryMs;
      this.lastFailureMs = Date.now();
      // A value the database refuses must not block the trail: retry the batch without payloads.
      this.stripPayloads = isDataError(error);
      this.logger.error({ err: error, entries: batch.count, retryInMs: this.retryMs }, 'audit batch not written; will retry');
    }
  }

  private releaseWaiters(): void {
    while (this.waiters.length > 0 && this.queue.length < this.config.audit.queueMax) this.waiters.shift()!();
  }
}

/** How far behind the audit trail is. */
export interface AuditLag {
  /** Entries waiting to be written. */
  pending: number;
  /** How long the oldest of them has waited, in milliseconds; null when none waits. */
  oldestUnwrittenMs: number | null;
  /** When a write last failed (Date.now()); null if none has since start. */
  lastFailureMs: number | null;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}

/** SQLSTATE class 22: a value the database refuses, which a retry alone would not fix. */
function isDataError(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && code.startsWith('22');
}


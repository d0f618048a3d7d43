import { randomUUID } from 'node:crypto';
import { GatewayRejectedError } from './errors';
import { AuditEvent, MAX_AUDIT_BATCH } from './audit-event';
import type { AuditDurability } from './options';
import { WriteAheadLog } from './write-ahead-log';

export interface AuditBatcherOptions {
  log: WriteAheadLog;
  /** What the log held unacknowledged when it was opened: sent first. */
  unacknowledged: AuditEvent[];
  batchSize: number;
  flushMs: number;
  durability: AuditDurability;
  /** One POST /v1/audit of a batch body; the gateway records each eventId once. */
  send: (events: AuditEvent[]) => Promise<void>;
  /** Deletes the write-ahead file on close when nothing is left in it (a file of this process alone). */
  removeFileWhenEmpty: boolean;
}

/**
 * Audit events on their way to the gateway: each is appended to the write-ahead file before
 * record() resolves, then sent in batch bodies (every `batchSize` events or `flushMs`), and
 * acknowledged in the file once the gateway has them. `batch` durability makes the file durable
 * once per window, just before the window's batches go out (one fdatasync for all its events);
 * `sync` resolves record() only after the fdatasync its event shares with those appended at the
 * same time. What a crash left unacknowledged is sent again on the next start; the eventId makes
 * the gateway record it once.
 */
export class AuditBatcher {
  /** Events not yet acknowledged, oldest first, from `head` on (a prefix sent is dropped in one splice). */
  private queue: AuditEvent[];
  private head = 0;
  private readonly timer: NodeJS.Timeout;
  private sending: Promise<void> | null = null;
  /** A send failed: a full batch waits for the next tick of the timer instead of retrying at every event. */
  private backingOff = false;

  constructor(private readonly options: AuditBatcherOptions) {
    this.queue = [...options.unacknowledged];
    this.timer = setInterval(() => {
      this.backingOff = false;
      void this.flush();
    }, options.flushMs).unref();
    if (this.queue.length > 0) void this.flush();
  }

  /** Records the event (a new eventId, stamped now); resolves with that id once it is in the file as `durability` says. */
  async record(fields: Omit<AuditEvent, 'eventId' | 'occurredAt'>): Promise<string> {
    const event: AuditEvent = { ...fields, eventId: randomUUID(), occurredAt: new Date().toISOString() };
    this.options.log.append(event);
    this.queue.push(event);
    if (this.pending >= this.options.batchSize && !this.backingOff) void this.flush();
    if (this.options.durability === 'sync') await this.options.log.sync();
    return event.eventId;
  }

  /** Events written but not yet acknowledged by the gateway. */
  get pending(): number {
    return this.queue.length - this.head;
  }

  /** Makes the file durable, then sends what is queued, batch by batch, until a batch fails (the next flush retries it). */
  flush(): Promise<void> {
    this.sending ??= this.sendAll().finally(() => (this.sending = null));
    return this.sending;
  }

  /** Stops the timer, tries one last flush, and closes the file. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
    await this.options.log.close(this.options.removeFileWhenEmpty);
  }

  private async sendAll(): Promise<void> {
    await this.options.log.sync();
    while (this.pending > 0) {
      const batch = this.queue.slice(this.head, this.head + Math.min(this.options.batchSize, MAX_AUDIT_BATCH));
      const { done, failed } = await this.deliver(batch);
      this.drop(done);
      this.backingOff = failed;
      if (failed) return;
    }
  }

  /**
   * Sends `events` as one batch. A batch refused as malformed (or too large) is sent again in
   * halves, so one bad event costs only itself: a single event refused is dropped, since no
   * resend can fix it. Any other failure stops at once (`failed`), keeping the rest queued.
   */
  private async deliver(events: AuditEvent[]): Promise<{ done: AuditEvent[]; failed: boolean }> {
    try {
      await this.options.send(events);
      return { done: events, failed: false };
    } catch (error) {
      if (!isPermanent(error)) return { done: [], failed: true };
      if (events.length === 1) return { done: events, failed: false };
    }
    const middle = Math.ceil(events.length / 2);
    const first = await this.deliver(events.slice(0, middle));
    if (first.failed) return first;
    const second = await this.deliver(events.slice(middle));
    return { done: [...first.done, ...second.done], failed: second.failed };
  }

  /** Acknowledges `done` (the first events of the queue, in order) and drops them from the queue. */
  private drop(done: AuditEvent[]): void {
    if (done.length === 0) return;
    this.options.log.acknowledge(done.map((event) => event.eventId));
    this.head += done.length;
    // The sent prefix is cut once it is half the array: O(1) amortized per event, whatever the backlog.
    if (this.head * 2 >= this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
  }
}

/** A batch the gateway refuses as malformed, too large or for an unknown agent never succeeds as it is. */
function isPermanent(error: unknown): boolean {
  return error instanceof GatewayRejectedError && (error.code === 'invalid_argument' || error.code === 'not_found');
}

import { randomUUID } from 'node:crypto';
import { GatewayRejectedError } from './errors';
import type { AuditEvent } from './http-transport';
import { WriteAheadLog } from './write-ahead-log';

export interface AuditBatcherOptions {
  logPath: string;
  batchSize: number;
  flushMs: number;
  send: (event: AuditEvent) => Promise<void>;
}

/**
 * Audit events on their way to the gateway: each is written to the write-ahead file before
 * record() resolves, then sent in batches (every `batchSize` events or `flushMs`), and
 * acknowledged in the file once the gateway has it. What a crash left unacknowledged is sent
 * again on the next start; the eventId makes the gateway record it once.
 */
export class AuditBatcher {
  private readonly queue: AuditEvent[];
  private readonly timer: NodeJS.Timeout;
  private sending: Promise<void> | null = null;

  private constructor(
    private readonly log: WriteAheadLog,
    unacknowledged: AuditEvent[],
    private readonly options: AuditBatcherOptions,
  ) {
    this.queue = unacknowledged;
    this.timer = setInterval(() => void this.flush(), options.flushMs).unref();
    if (this.queue.length > 0) void this.flush();
  }

  /** Opens the write-ahead file and queues what it holds unacknowledged. */
  static async start(options: AuditBatcherOptions): Promise<AuditBatcher> {
    const { log, unacknowledged } = await WriteAheadLog.openFile(options.logPath);
    return new AuditBatcher(log, unacknowledged, options);
  }

  /** Durably records the event (a new eventId); resolves with that id once it is on disk. */
  async record(fields: Omit<AuditEvent, 'eventId'>): Promise<string> {
    const event: AuditEvent = { ...fields, eventId: randomUUID() };
    await this.log.append(event);
    this.queue.push(event);
    if (this.queue.length >= this.options.batchSize) void this.flush();
    return event.eventId;
  }

  /** Events written but not yet acknowledged by the gateway. */
  get pending(): number {
    return this.queue.length;
  }

  /** Sends what is queued, batch by batch, until a batch fails (the next flush retries it). */
  flush(): Promise<void> {
    this.sending ??= this.sendAll().finally(() => (this.sending = null));
    return this.sending;
  }

  /** Stops the timer, tries one last flush, and closes the file. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
    await this.log.close();
  }

  private async sendAll(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.options.batchSize);
      const outcomes = await Promise.all(batch.map((event) => this.options.send(event).then(() => true, (error: unknown) => isPermanent(error))));
      const done = batch.filter((_, index) => outcomes[index]);
      this.queue.unshift(...batch.filter((_, index) => !outcomes[index]));
      if (done.length > 0) await this.log.acknowledge(done.map((event) => event.eventId));
      if (done.length < batch.length) return;
    }
  }
}

/** An event the gateway refuses as malformed or for an unknown agent never succeeds: drop it. */
function isPermanent(error: unknown): boolean {
  return error instanceof GatewayRejectedError && (error.code === 'invalid_argument' || error.code === 'not_found');
}

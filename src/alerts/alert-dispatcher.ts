import fs from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { AlertsConfig } from '../config/app-config';

/** Messages between the AlertDispatcher and the alert worker. */
/** `alerts`: a batch of raised alerts as raiseAlerts lays them out (alert-triggers.ts). */
export type AlertWorkerRequest = { type: 'alerts'; alerts: unknown[]; count: number } | { type: 'drain'; withinMs: number };
export type AlertWorkerReply = { type: 'log'; level: 'warn' | 'error'; message: string; fields: Record<string, unknown> } | { type: 'drained' };
export interface AlertWorkerData {
  config: AlertsConfig;
  redisUrl?: string;
  /** Alerts handed over and not yet taken by the worker (one Int32, shared): it takes each batch's count off as it takes the batch. */
  backlog: SharedArrayBuffer;
}

/**
 * Most alerts handed over and not yet taken by the worker. It runs at the lowest CPU priority
 * (alert-worker.ts), so on cores saturated by decisions it may fall behind, and the batches
 * waiting in its port would grow without bound; past this they are dropped, with a warning.
 */
export const MAX_BACKLOG = 100_000;
/** The shortest time between two warnings of alerts dropped here. */
const WARN_INTERVAL_MS = 1000;

/**
 * Hands batches of alerts to the alert worker thread (alert-worker.ts), which delivers them;
 * its log lines come back here to the gateway's logger. A crashed worker is replaced on the
 * next batch (the alerts it held are lost, and that is logged).
 */
export class AlertDispatcher {
  private worker: Worker | null = null;
  private backlog = new Int32Array(new SharedArrayBuffer(4));
  /** Alerts dropped since the last warning, and when that was. */
  private dropped = 0;
  private warnedAt = -Infinity;

  constructor(
    private readonly data: Omit<AlertWorkerData, 'backlog'>,
    private readonly logger: Logger,
    private readonly maxBacklog = MAX_BACKLOG,
  ) {}

  /** Hands over a batch of `count` raised alerts (raiseAlerts's layout), or drops it when the worker is too far behind. */
  dispatch(alerts: unknown[], count: number): void {
    const worker = this.worker ?? this.start();
    if (Atomics.load(this.backlog, 0) + count > this.maxBacklog) return this.drop(count);
    Atomics.add(this.backlog, 0, count);
    worker.postMessage({ type: 'alerts', alerts, count } satisfies AlertWorkerRequest);
  }

  /** Lets the worker finish what it is sending, for at most `drainMs` (retries included), then stops it. */
  async close(drainMs = 0): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    if (worker === null) return;
    if (drainMs > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, drainMs + 1000);
        worker.on('message', (reply: AlertWorkerReply) => {
          if (reply.type !== 'drained') return;
          clearTimeout(timer);
          resolve();
        });
        worker.once('exit', () => resolve());
        worker.postMessage({ type: 'drain', withinMs: drainMs } satisfies AlertWorkerRequest);
      });
    }
    await worker.terminate();
  }

  private drop(count: number): void {
    this.dropped += count;
    const now = Date.now();
    if (now - this.warnedAt < WARN_INTERVAL_MS) return;
    this.logger.warn({ dropped: this.dropped, backlog: Atomics.load(this.backlog, 0) }, `the alert worker is more than ${this.maxBacklog} alerts behind (the cores are busy with requests): alerts dropped`);
    this.dropped = 0;
    this.warnedAt = now;
  }

  private start(): Worker {
    const backlog = new SharedArrayBuffer(4);
    this.backlog = new Int32Array(backlog);
    const worker = new Worker(alertWorkerScript(), { workerData: { ...this.data, backlog } satisfies AlertWorkerData });
    worker.on('message', (reply: AlertWorkerReply) => {
      if (reply.type === 'log') this.logger[reply.level](reply.fields, reply.message);
    });
    worker.on('error', (error) => this.logger.error({ err: error }, 'alert worker crashed; alerts it held are lost'));
    worker.on('exit', () => {
      if (this.worker === worker) this.worker = null;
    });
    worker.unref();
    this.worker = worker;
    return worker;
  }
}

/** The compiled worker script: next to this file in dist/, or in dist/ when running from sources (tests). */
function alertWorkerScript(): string {
  const beside = path.join(__dirname, 'alert-worker.js');
  if (fs.existsSync(beside)) return beside;
  const built = path.resolve(__dirname, '../../dist/src/alerts/alert-worker.js');
  if (fs.existsSync(built)) return built;
  throw new Error('dist/src/alerts/alert-worker.js not found: run `npm run build`');
}

import fs from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { AlertsConfig } from '../config/app-config';

/** Messages between the AlertDispatcher and the alert worker. */
/** `alerts`: a batch of raised alerts as raiseAlerts lays them out (alert-triggers.ts). */
export type AlertWorkerRequest = { type: 'alerts'; alerts: unknown[] } | { type: 'drain'; withinMs: number };
export type AlertWorkerReply = { type: 'log'; level: 'warn' | 'error'; message: string; fields: Record<string, unknown> } | { type: 'drained' };
export interface AlertWorkerData {
  config: AlertsConfig;
  redisUrl?: string;
}

/**
 * Hands batches of alerts to the alert worker thread (alert-worker.ts), which delivers them;
 * its log lines come back here to the gateway's logger. A crashed worker is replaced on the
 * next batch (the alerts it held are lost, and that is logged).
 */
export class AlertDispatcher {
  private worker: Worker | null = null;

  constructor(
    private readonly data: AlertWorkerData,
    private readonly logger: Logger,
  ) {}

  /** Hands over a batch of raised alerts (raiseAlerts's layout). */
  dispatch(alerts: unknown[]): void {
    const worker = this.worker ?? this.start();
    worker.postMessage({ type: 'alerts', alerts } satisfies AlertWorkerRequest);
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

  private start(): Worker {
    const worker = new Worker(alertWorkerScript(), { workerData: this.data satisfies AlertWorkerData });
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

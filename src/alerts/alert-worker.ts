/**
 * The alert worker thread: receives batches of alerts from the AlertDispatcher and delivers
 * them (rate limit, providers, retries), so no alert's JSON, signature or HTTP exchange runs on
 * the thread that serves requests, and, at the lowest CPU priority, none takes a core from it.
 */
import fs from 'node:fs';
import os from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { AlertDelivery } from './alert-delivery';
import { alertsOfBatch } from './alert-triggers';
import type { AlertWorkerData, AlertWorkerReply, AlertWorkerRequest } from './alert-dispatcher';

const { config, redisUrl, backlog } = workerData as AlertWorkerData;
const handedOver = new Int32Array(backlog);
lowestPriority();
const delivery = AlertDelivery.fromConfig(config, redisUrl, (level, message, fields) => reply({ type: 'log', level, message, fields }));

parentPort!.on('message', (request: AlertWorkerRequest) => {
  if (request.type === 'drain') {
    const deadline = new Promise((resolve) => setTimeout(resolve, request.withinMs));
    void Promise.race([delivery.idle(), deadline]).then(() => {
      delivery.flushWarnings();
      // What is left at shutdown is lost (docs/alerts.md "Delivery"); the log says how much.
      const left = delivery.underWay();
      if (left > 0) reply({ type: 'log', level: 'warn', message: 'alert deliveries abandoned at shutdown', fields: { deliveries: left, alertIds: delivery.underWayAlertIds(), drainMs: request.withinMs } });
      reply({ type: 'drained' });
    });
    return;
  }
  Atomics.sub(handedOver, 0, request.count);
  const alerts = alertsOfBatch(request.alerts);
  delivery.deliver(alerts).catch((error: unknown) =>
    reply({ type: 'log', level: 'error', message: 'alert delivery failed', fields: { err: error instanceof Error ? error.message : String(error), alertIds: alerts.map((alert) => alert.id) } }),
  );
});

/**
 * Delivery never slows a decision: this thread takes nice 19, so when requests keep the cores
 * busy the scheduler runs it in their gaps rather than beside them (an alert costs a few times
 * what a denial's decision does; bench/alerts.bench.ts). Linux names a thread's id in
 * /proc/thread-self; elsewhere the thread keeps the gateway's priority.
 */
function lowestPriority(): void {
  try {
    os.setPriority(Number(fs.readlinkSync('/proc/thread-self').split('/').pop()), 19);
  } catch {
    // Not Linux: nothing names this thread alone.
  }
}

function reply(message: AlertWorkerReply): void {
  parentPort!.postMessage(message);
}

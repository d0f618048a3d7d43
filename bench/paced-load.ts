import http from 'node:http';

/** What a paced run measured. */
export interface PacedResult {
  sent: number;
  /** Requests answered, whatever the status. */
  completed: number;
  non2xx: number;
  errors: number;
  seconds: number;
  opsPerSec: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  p999Ms: number;
}

export interface PacedRequest {
  method: string;
  headers: Record<string, string>;
  body: string;
}

/** How often the scheduler wakes up to send what has come due. */
const TICK_MS = 1;

/**
 * An evenly paced open-loop load: `rate` requests a second, the i-th sent at i/rate s (to the
 * scheduler's millisecond) whether or not earlier ones were answered, over at most `connections`
 * kept-alive connections (a request finding them all busy waits for one, and that wait counts).
 * Each latency is timed from the request's send to the end of its answer: a server stall is
 * charged to every request sent during it, as no answer holds the next request back; a stall of
 * this process's timer is not charged to the server. autocannon's `overallRate` is not this: it
 * lets each connection send its share of a second back to back as soon as answers come, then
 * pauses it until the next second, so every second starts with a burst at full load and the p99
 * measures that burst's queue.
 */
export async function pacedLoad(url: string, request: PacedRequest, rate: number, seconds: number, connections: number): Promise<PacedResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const total = Math.floor(rate * seconds);
  const latencies = new Float64Array(total);
  const intervalMs = 1000 / rate;
  let sent = 0;
  let done = 0;
  let non2xx = 0;
  let errors = 0;
  const start = performance.now();
  await new Promise<void>((resolve) => {
    const finish = (index: number, sentAt: number, ok: boolean, status: number): void => {
      latencies[index] = performance.now() - sentAt;
      if (!ok) errors++;
      else if (status < 200 || status > 299) non2xx++;
      if (++done === total) resolve();
    };
    const send = (index: number): void => {
      const sentAt = performance.now();
      const outgoing = http.request(url, { method: request.method, headers: request.headers, agent }, (response) => {
        response.resume();
        response.on('end', () => finish(index, sentAt, true, response.statusCode ?? 0));
        response.on('error', () => finish(index, sentAt, false, 0));
      });
      outgoing.on('error', () => finish(index, sentAt, false, 0));
      outgoing.end(request.body);
    };
    const tick = (): void => {
      const due = Math.min(total, Math.floor((performance.now() - start) / intervalMs) + 1);
      while (sent < due) send(sent++);
      if (sent < total) setTimeout(tick, TICK_MS);
    };
    tick();
  });
  const elapsedMs = performance.now() - start;
  agent.destroy();
  const sorted = latencies.sort();
  const ms = (quantile: number) => round3(sorted[Math.min(total - 1, Math.floor(total * quantile))]);
  const completed = total - errors;
  return {
    sent: total,
    completed,
    non2xx,
    errors,
    seconds: round3(elapsedMs / 1000),
    opsPerSec: Math.round((completed / elapsedMs) * 1000),
    p50Ms: ms(0.5),
    p90Ms: ms(0.9),
    p99Ms: ms(0.99),
    p999Ms: ms(0.999),
  };
}

function round3(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}

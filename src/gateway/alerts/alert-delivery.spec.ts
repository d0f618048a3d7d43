import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { testAlert } from './alert';
import { AlertDelivery } from './alert-delivery';
import { AlertHttpClient } from './alert-http';
import { LocalAlertRateCounter } from './alert-rate-counter';
import { ChatProvider } from './chat-provider';
import { WebhookProvider } from './webhook-provider';

/** AlertDelivery with real providers against real node:http receivers. */

const ORIGIN = { instance: 'gw', environment: 'test' };

async function receiver(answer: boolean): Promise<{ url: string; count: () => number; close: () => Promise<void> }> {
  let received = 0;
  const server = http.createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      received++;
      if (answer) response.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    count: () => received,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function until(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
}

/** A receiver that takes `perSecond` requests a second and answers the rest 429 with `Retry-After: 1`, as Resend's API does (2 a second by default). */
async function throttledReceiver(perSecond: number): Promise<{ url: string; accepted: () => number; close: () => Promise<void> }> {
  let accepted = 0;
  let second = 0;
  let inSecond = 0;
  const server = http.createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      const now = Math.floor(Date.now() / 1000);
      if (now !== second) [second, inSecond] = [now, 0];
      if (++inSecond > perSecond) return response.writeHead(429, { 'retry-after': '1' }).end('{"name":"rate_limit_exceeded"}');
      accepted++;
      response.end('{"id":"ok"}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    accepted: () => accepted,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

describe('AlertDelivery', () => {
  it('waits as a 429 answer asks (Retry-After) without counting it as a failed attempt: a burst to a throttled receiver all arrives', async () => {
    const throttled = await throttledReceiver(2);
    const logs: string[] = [];
    const delivery = new AlertDelivery([new ChatProvider(`${throttled.url}/chat`, ORIGIN, new AlertHttpClient())], new LocalAlertRateCounter(1000), 1000, (_level, message) => logs.push(message));
    try {
      await delivery.deliver(Array.from({ length: 10 }, () => testAlert()));
      await until(() => throttled.accepted() === 10, 15_000);
      expect(throttled.accepted()).toBe(10);
      expect(logs.filter((message) => message.includes('failed after'))).toEqual([]);
    } finally {
      await delivery.close();
      await throttled.close();
    }
  }, 20_000);

  it('waits until the time a Retry-After HTTP date names, not the shortest backoff', async () => {
    // 429 with `Retry-After: <date 3 s from now>` to the first request, then 200s.
    const arrivals: number[] = [];
    const server = http.createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        arrivals.push(Date.now());
        if (arrivals.length === 1) return response.writeHead(429, { 'retry-after': new Date(Date.now() + 3000).toUTCString() }).end();
        response.end('{"id":"ok"}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const waits: unknown[] = [];
    const delivery = new AlertDelivery([new WebhookProvider(`${url}/hook`, undefined, ORIGIN, new AlertHttpClient())], new LocalAlertRateCounter(1000), 1000, (_level, message, fields) => {
      if (message.includes('slow down')) waits.push(fields.waitMs);
    });
    try {
      await delivery.deliver([testAlert()]);
      await until(() => arrivals.length === 2, 8000);
      // The date has whole seconds: 2 to 3 s from the answer.
      expect(waits).toHaveLength(1);
      expect(waits[0]).toBeGreaterThan(1900);
      expect(arrivals[1] - arrivals[0]).toBeGreaterThan(1900);
    } finally {
      await delivery.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  }, 10_000);


  it('caps deliveries under way per provider: a hung receiver does not cost a healthy one its alerts', async () => {
    const [hung, healthy] = await Promise.all([receiver(false), receiver(true)]);
    const http1 = new AlertHttpClient();
    const providers = [new WebhookProvider(`${hung.url}/hook`, undefined, ORIGIN, http1), new ChatProvider(`${healthy.url}/chat`, ORIGIN, http1)];
    const logs: Array<{ message: string; fields: Record<string, unknown> }> = [];
    const delivery = new AlertDelivery(providers, new LocalAlertRateCounter(1000), 1000, (_level, message, fields) => logs.push({ message, fields }), { attempts: 1, firstDelayMs: 10 }, 5);
    try {
      await delivery.deliver(Array.from({ length: 5 }, () => testAlert()));
      // The healthy receiver's answers settled (only the hung receiver's 5 under way): else the next batch races them against the cap.
      await until(() => healthy.count() === 5 && hung.count() >= 1 && delivery.underWay() === 5);
      await delivery.deliver(Array.from({ length: 5 }, () => testAlert()));
      await until(() => healthy.count() === 10);
      expect(healthy.count()).toBe(10);
      const drops = logs.filter((line) => line.message.includes('under way'));
      expect(drops).toHaveLength(1);
      expect(drops[0].fields).toMatchObject({ dropped: 5, provider: 'webhook' });
    } finally {
      await delivery.close();
      await Promise.all([hung.close(), healthy.close()]);
    }
  });

  it('warns of alerts dropped by the rate limit at most once a second, with how many and which: a sustained burst sends a batch every 10 ms', async () => {
    const healthy = await receiver(true);
    const lines: Array<{ message: string; fields: Record<string, unknown> }> = [];
    const delivery = new AlertDelivery([new WebhookProvider(`${healthy.url}/hook`, undefined, ORIGIN, new AlertHttpClient())], new LocalAlertRateCounter(2), 2, (_level, message, fields) =>
      lines.push({ message, fields }),
    );
    try {
      const sent: string[] = [];
      for (let batch = 0; batch < 30; batch++) {
        const alerts = Array.from({ length: 3 }, () => testAlert());
        sent.push(...alerts.map((alert) => alert.id));
        await delivery.deliver(alerts);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      // The limit is per clock minute: 2 sent, or 4 when the burst straddles a minute's end.
      await until(() => healthy.count() >= 2 && lines.reduce((sum, line) => sum + Number(line.fields.dropped ?? 0), 0) === 90 - healthy.count(), 3000);
      const drops = lines.filter((line) => line.message.includes('ALERT_RATE_LIMIT=2'));
      // 30 batches over about half a second: the first drop at once, the rest summed up a second later.
      expect(drops.length).toBeLessThanOrEqual(2);
      expect(drops.reduce((sum, line) => sum + Number(line.fields.dropped), 0)).toBe(90 - healthy.count());
      for (const line of drops) expect(sent).toEqual(expect.arrayContaining(line.fields.alertIds as string[]));
    } finally {
      await delivery.close();
      await healthy.close();
    }
  });

  it('backs off, doubling, from a receiver that answers 429 without Retry-After, rather than asking again twice a second', async () => {
    let asked = 0;
    const server = http.createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        asked++;
        response.writeHead(429).end('slow down');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const delivery = new AlertDelivery([new WebhookProvider(`${url}/hook`, undefined, ORIGIN, new AlertHttpClient())], new LocalAlertRateCounter(10), 10, () => undefined);
    try {
      await delivery.deliver([testAlert()]);
      await new Promise((resolve) => setTimeout(resolve, 3800));
      // Asked at 0, 0.5, 1.5 and 3.5 s (waits of 0.5, 1 and 2 s); at a steady 0.5 s it was 8 times.
      expect(asked).toBe(4);
    } finally {
      await delivery.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    }
  });
});

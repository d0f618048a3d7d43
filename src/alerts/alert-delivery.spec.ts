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

describe('AlertDelivery', () => {
  it('caps deliveries under way per provider: a hung receiver does not cost a healthy one its alerts', async () => {
    const [hung, healthy] = await Promise.all([receiver(false), receiver(true)]);
    const http1 = new AlertHttpClient();
    const providers = [new WebhookProvider(`${hung.url}/hook`, undefined, ORIGIN, http1), new ChatProvider(`${healthy.url}/chat`, ORIGIN, http1)];
    const logs: Array<{ message: string; fields: Record<string, unknown> }> = [];
    const delivery = new AlertDelivery(providers, new LocalAlertRateCounter(1000), 1000, (_level, message, fields) => logs.push({ message, fields }), { attempts: 1, firstDelayMs: 10 }, 5);
    try {
      await delivery.deliver(Array.from({ length: 5 }, () => testAlert()));
      await until(() => healthy.count() === 5 && hung.count() >= 1);
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
});

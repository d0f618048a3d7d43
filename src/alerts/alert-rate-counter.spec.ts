import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { RedisAlertRateCounter } from './alert-rate-counter';

const REDIS_PORT = 6379;

/** A TCP relay to the real Redis that can be cut and restored, as a network outage does. */
class RedisRelay {
  private server: net.Server | null = null;
  private readonly sockets = new Set<net.Socket>();
  port = 0;

  async open(): Promise<void> {
    this.server = net.createServer((client) => {
      const upstream = net.connect(REDIS_PORT, '127.0.0.1');
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('error', () => undefined);
        socket.on('close', () => this.sockets.delete(socket));
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  async cut(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (server === null) return;
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

describe('RedisAlertRateCounter', () => {
  const relay = new RedisRelay();
  const messages: string[] = [];
  let counter: RedisAlertRateCounter;

  beforeAll(async () => {
    await relay.open();
    counter = new RedisAlertRateCounter(`redis://127.0.0.1:${relay.port}`, 1000, `spec-${process.pid}-${Date.now()}`, (message) => messages.push(message));
  });
  afterAll(async () => {
    await counter.close();
    await relay.cut();
  });

  it('says once per outage that it counts alone, not once per batch, and once that Redis is back', async () => {
    const now = Date.now();
    expect(await counter.take(2, now)).toBe(2);
    await relay.cut();
    for (let batch = 0; batch < 5; batch++) expect(await counter.take(1, now)).toBe(1);
    expect(messages.filter((message) => message.startsWith('alert rate counter in Redis unavailable'))).toHaveLength(1);
    await relay.open();
    const deadline = Date.now() + 10_000;
    while (!messages.includes('alert rate counter in Redis again') && Date.now() < deadline) {
      await counter.take(1, now);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(messages.filter((message) => message === 'alert rate counter in Redis again')).toHaveLength(1);
    expect(messages.filter((message) => message.startsWith('alert rate counter in Redis unavailable'))).toHaveLength(1);
  });
});

import { freePort } from '../../../test/support/gateway-process';
import { TcpRelay } from '../../../test/support/tcp-relay';
import { REDIS_COMMAND_TIMEOUT_MS } from '../common/redis-command-timeout';
import { RedisAlertRateCounter } from './alert-rate-counter';

const REDIS_PORT = 6379;

describe('RedisAlertRateCounter', () => {
  const messages: string[] = [];
  let relay: TcpRelay;
  let counter: RedisAlertRateCounter;

  beforeAll(async () => {
    // A relay to the real Redis, cut and restored as a network outage does.
    relay = await TcpRelay.listen(await freePort(), REDIS_PORT);
    counter = new RedisAlertRateCounter(`redis://127.0.0.1:${relay.port}`, 1000, `spec-${process.pid}-${Date.now()}`, (message) => messages.push(message));
  });
  afterAll(async () => {
    await counter.close();
    await relay.close();
  });

  it('says once per outage that it counts alone, not once per batch, and once that Redis is back', async () => {
    const now = Date.now();
    expect(await counter.take('org_a', 2, now)).toBe(2);
    await relay.close();
    for (let batch = 0; batch < 5; batch++) expect(await counter.take('org_a', 1, now)).toBe(1);
    expect(messages.filter((message) => message.startsWith('alert rate counter in Redis unavailable'))).toHaveLength(1);
    // ioredis's own reports (a failed reconnect) name the counter too, not just `connect ECONNREFUSED …`.
    expect(messages.filter((message) => message.includes('ECONNREFUSED')).length).toBeGreaterThan(0);
    expect(messages.filter((message) => !message.startsWith('alert rate counter'))).toEqual([]);
    await relay.open();
    const deadline = Date.now() + 10_000;
    while (!messages.includes('alert rate counter in Redis again') && Date.now() < deadline) {
      await counter.take('org_a', 1, now);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(messages.filter((message) => message === 'alert rate counter in Redis again')).toHaveLength(1);
    expect(messages.filter((message) => message.startsWith('alert rate counter in Redis unavailable'))).toHaveLength(1);
  });

  it('counts alone when Redis stops answering without closing the connection, and in Redis again once it answers', async () => {
    const now = Date.now();
    expect(await counter.take('org_a', 1, now)).toBe(1);
    messages.length = 0;
    relay.hold();
    try {
      const started = Date.now();
      expect(await counter.take('org_a', 3, now)).toBe(3);
      expect(Date.now() - started).toBeLessThan(REDIS_COMMAND_TIMEOUT_MS + 1000);
      expect(messages.filter((message) => message.startsWith('alert rate counter in Redis unavailable'))).toHaveLength(1);
    } finally {
      relay.release();
    }
    const deadline = Date.now() + 10_000;
    while (!messages.includes('alert rate counter in Redis again') && Date.now() < deadline) await counter.take('org_a', 1, now);
    expect(messages).toContain('alert rate counter in Redis again');
  }, 15_000);
});

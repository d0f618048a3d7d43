import Redis from 'ioredis';
import { call, TestResponse } from './support/http-client';
import { startGateway, TestGateway } from './support/test-gateway';

/**
 * RATE_LIMIT_RPM (SPEC.md "Limits"): one budget per client address shared by the billing
 * endpoints, the webhook exempt, 429 with SPEC.md's body; shared by every instance through
 * Redis when REDIS_URL is set.
 */

const REDIS_URL = 'redis://127.0.0.1:6379';
const THROTTLE_KEYS = 'agentgov:throttle:*';

interface RateLimitedBody {
  error: string;
  message: string;
  retry_after: number;
  limit: string;
}

async function clearThrottleKeys(): Promise<void> {
  const redis = new Redis(REDIS_URL);
  try {
    const keys = await redis.keys(THROTTLE_KEYS);
    if (keys.length > 0) await redis.del(...keys);
  } finally {
    redis.disconnect();
  }
}

const plans = (gateway: TestGateway) => call(gateway.url, 'GET', '/billing/plans');
const badCheckout = (gateway: TestGateway) => call(gateway.url, 'POST', '/billing/checkout', { body: { email: 'x' } });
const unsignedWebhook = (gateway: TestGateway) => call(gateway.url, 'POST', '/billing/webhook', { body: { id: 'evt_1' } });

function expectRateLimited(response: TestResponse, rpm: number): void {
  expect(response.status).toBe(429);
  const body = response.body as unknown as RateLimitedBody;
  expect(body).toEqual({ error: 'rate_limited', message: expect.stringContaining('Too Many Requests'), retry_after: expect.any(Number), limit: `${rpm}/1m per client address` });
  expect(body.retry_after).toBeGreaterThan(0);
  expect(body.retry_after).toBeLessThanOrEqual(60);
  expect(Number(response.headers.get('retry-after'))).toBe(body.retry_after);
}

describe('shared through Redis by two gateway instances', () => {
  const RPM = 5;
  let first: TestGateway;
  let second: TestGateway;

  beforeAll(async () => {
    await clearThrottleKeys();
    const env = { REDIS_URL, RATE_LIMIT_RPM: String(RPM), PAYMENT_WEBHOOK_SECRET: 'whsec_throttle_test' };
    first = await startGateway(env);
    second = await startGateway(env);
  });

  afterAll(async () => {
    await Promise.all([first?.close(), second?.close()]);
    await clearThrottleKeys();
  });

  it('counts every billing endpoint on either instance against one budget, and exempts the webhook', async () => {
    const statuses = [
      (await plans(first)).status,
      (await badCheckout(second)).status,
      (await plans(second)).status,
      (await call(first.url, 'POST', '/billing/portal', { bearer: 'adm_nobody', body: {} })).status,
      (await plans(first)).status,
    ];
    // The portal call is refused by authentication before it is counted.
    expect(statuses).toEqual([200, 400, 200, 401, 200]);
    expect((await badCheckout(second)).status).toBe(400);
    expectRateLimited(await plans(second), RPM);
    expectRateLimited(await plans(first), RPM);
    expectRateLimited(await badCheckout(first), RPM);
    for (let i = 0; i < RPM + 2; i++) {
      const webhook = await unsignedWebhook(i % 2 === 0 ? first : second);
      expect(webhook.status).toBe(400);
      expect(webhook.body.error).toBe('invalid_signature');
    }
  });
});

describe('in memory without REDIS_URL', () => {
  const RPM = 3;
  let first: TestGateway;
  let second: TestGateway;

  beforeAll(async () => {
    first = await startGateway({ RATE_LIMIT_RPM: String(RPM) });
    second = await startGateway({ RATE_LIMIT_RPM: String(RPM) });
  });

  afterAll(async () => {
    await Promise.all([first?.close(), second?.close()]);
  });

  it('limits each instance on its own', async () => {
    for (let i = 0; i < RPM; i++) expect((await plans(first)).status).toBe(200);
    expectRateLimited(await plans(first), RPM);
    expect((await plans(second)).status).toBe(200);
  });
});

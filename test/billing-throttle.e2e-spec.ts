import http from 'node:http';
import { randomInt } from 'node:crypto';
import { freePort } from './support/pdp-client';
import { TcpRelay } from './support/tcp-relay';
import { startGateway, TestGateway } from './support/test-gateway';

/**
 * RATE_LIMIT_RPM (docs/billing.md): one budget per client address shared by the billing
 * endpoints, the webhook exempt, 429 with the body of docs/proxy.md "Answers"; shared by every instance through
 * Redis when REDIS_URL is set. Each test calls from its own loopback address (127.x.y.z), so
 * runs sharing the Redis server never share a budget.
 */

const REDIS_URL = 'redis://127.0.0.1:6379';

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Record<string, unknown>;
}

function randomLoopback(): string {
  return `127.${randomInt(1, 255)}.${randomInt(0, 256)}.${randomInt(1, 255)}`;
}

/** One request sent from `from`, a loopback address: the client address the gateway sees. */
function callFrom(from: string, gateway: TestGateway, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const url = new URL(path, gateway.url);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const request = http.request(
      { host: url.hostname, port: url.port, path: url.pathname, method, localAddress: from, headers: { ...(payload ? { 'content-type': 'application/json' } : {}), ...headers } },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: response.statusCode ?? 0, headers: response.headers, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} });
        });
      },
    );
    request.on('error', reject);
    request.end(payload);
  });
}

const plans = (from: string, gateway: TestGateway) => callFrom(from, gateway, 'GET', '/billing/plans');
const badCheckout = (from: string, gateway: TestGateway) => callFrom(from, gateway, 'POST', '/billing/checkout', { email: 'x' });
const unsignedWebhook = (from: string, gateway: TestGateway) => callFrom(from, gateway, 'POST', '/billing/webhook', { id: 'evt_1' });

function expectRateLimited(answer: Answer, rpm: number): void {
  expect(answer.status).toBe(429);
  expect(answer.body).toEqual({ error: 'rate_limited', message: expect.stringContaining('Too Many Requests'), retry_after: expect.any(Number), limit: `${rpm}/1m per client address` });
  const retryAfter = answer.body.retry_after as number;
  expect(retryAfter).toBeGreaterThan(0);
  expect(retryAfter).toBeLessThanOrEqual(60);
  expect(Number(answer.headers['retry-after'])).toBe(retryAfter);
}

describe('shared through Redis by two gateway instances', () => {
  const RPM = 5;
  let first: TestGateway;
  let second: TestGateway;

  beforeAll(async () => {
    const env = { REDIS_URL, RATE_LIMIT_RPM: String(RPM), PAYMENT_WEBHOOK_SECRET: 'whsec_throttle_test' };
    first = await startGateway(env);
    second = await startGateway(env);
  });

  afterAll(async () => {
    await Promise.all([first?.close(), second?.close()]);
  });

  it('counts every billing endpoint on either instance against one budget per client, and exempts the webhook', async () => {
    const client = randomLoopback();
    const statuses = [
      (await plans(client, first)).status,
      (await badCheckout(client, second)).status,
      (await plans(client, second)).status,
      (await callFrom(client, first, 'POST', '/billing/portal', {}, { authorization: 'Bearer adm_nobody' })).status,
      (await plans(client, first)).status,
    ];
    // The portal call is refused by authentication before it is counted.
    expect(statuses).toEqual([200, 400, 200, 401, 200]);
    expect((await badCheckout(client, second)).status).toBe(400);
    expectRateLimited(await plans(client, second), RPM);
    expectRateLimited(await plans(client, first), RPM);
    expectRateLimited(await badCheckout(client, first), RPM);
    for (let i = 0; i < RPM + 2; i++) {
      const webhook = await unsignedWebhook(client, i % 2 === 0 ? first : second);
      expect(webhook.status).toBe(400);
      expect(webhook.body.error).toBe('invalid_signature');
    }
    // Another client address has its own budget.
    expect((await plans(randomLoopback(), second)).status).toBe(200);
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
    const client = randomLoopback();
    for (let i = 0; i < RPM; i++) expect((await plans(client, first)).status).toBe(200);
    expectRateLimited(await plans(client, first), RPM);
    expect((await plans(client, second)).status).toBe(200);
  });
});

describe('Redis not answering', () => {
  let redis: TcpRelay;
  let gateway: TestGateway;

  beforeAll(async () => {
    redis = await TcpRelay.listen(await freePort(), 6379);
    gateway = await startGateway({ REDIS_URL: `redis://127.0.0.1:${redis.port}`, RATE_LIMIT_RPM: '5' });
    expect((await plans(randomLoopback(), gateway)).status).toBe(200);
  });

  afterAll(async () => {
    redis?.release();
    await gateway?.close();
    await redis?.close();
  });

  it('answers a billing request 503 within seconds, not never: the budget cannot be counted', async () => {
    redis.hold();
    const started = Date.now();
    const answer = await Promise.race([plans(randomLoopback(), gateway), new Promise<null>((resolve) => setTimeout(() => resolve(null), 8000))]);
    expect(answer?.status).toBe(503);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(answer?.body).toMatchObject({ error: 'service_unavailable', message: expect.stringContaining('REDIS_URL') });
    redis.release();
  });
});

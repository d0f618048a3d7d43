import { createHmac } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Alert, testAlert } from './alert';
import { LocalAlertRateCounter } from './alert-rate-counter';
import { AlertHttpClient } from './alert-http';
import { webhookBody, webhookHeaders, WebhookProvider } from './webhook-provider';

describe('webhook signatures', () => {
  const alert = testAlert(0);
  const body = webhookBody(alert, { instance: 'gw', environment: 'test' });

  it('sign the raw body (docs/alerts.md) and `<timestamp>.<body>` (replay-proof) with the secret', () => {
    const headers = webhookHeaders(alert, body, 'k', 1_700_000_000);
    expect(headers['X-Service-Signature']).toBe(`sha256=${createHmac('sha256', 'k').update(body).digest('hex')}`);
    expect(headers['X-Service-Timestamp']).toBe('1700000000');
    expect(headers['X-Service-Signature-V2']).toBe(`sha256=${createHmac('sha256', 'k').update(`1700000000.${body}`).digest('hex')}`);
  });

  it('are absent without a secret', () => {
    const headers = webhookHeaders(alert, body, undefined, 1);
    expect(headers).not.toHaveProperty('X-Service-Signature');
    expect(headers).not.toHaveProperty('X-Service-Signature-V2');
    expect(headers).toMatchObject({ 'content-type': 'application/json', 'user-agent': 'Service/1.0', 'X-Service-Event': 'alert', 'X-Service-Trigger': 'test' });
  });
});

describe('webhook body', () => {
  const origin = { instance: 'gw "eu"', environment: 'prod\\1' };
  const payload = (alert: Alert) => ({ event: 'service.alert', version: '1.0', id: alert.id, timestamp: alert.timestamp, severity: alert.severity, trigger: alert.trigger, title: alert.title, message: alert.message, entry: alert.entry, instance: origin.instance, environment: origin.environment });

  it('is JSON.stringify of the payload of docs/alerts.md, byte for byte, for plain and escaped text', () => {
    const plain = testAlert(0);
    const odd: Alert = { ...plain, title: 'quote " backslash \\ tab \t nul \u0000 del \u007f', message: 'Agent Zoë (ünïcode) – “quoted” 🚨 lone \ud800', entry: { ...plain.entry, agentName: 'Zoë', path: '/a?b="c"', reason: 'line\nbreak \u2028' } };
    for (const alert of [plain, odd]) expect(webhookBody(alert, origin)).toBe(JSON.stringify(payload(alert)));
  });
});

describe('LocalAlertRateCounter', () => {
  it('allows `limit` alerts per clock minute, the first ones of a batch', async () => {
    const counter = new LocalAlertRateCounter(3);
    expect(await counter.take('org_a', 2, 60_000)).toBe(2);
    expect(await counter.take('org_a', 2, 60_500)).toBe(1);
    expect(await counter.take('org_a', 1, 119_999)).toBe(0);
    expect(await counter.take('org_a', 5, 120_000)).toBe(3);
  });

  it('counts each organization apart: one organization’s alerts never use up another’s', async () => {
    const counter = new LocalAlertRateCounter(2);
    expect(await counter.take('org_a', 5, 60_000)).toBe(2);
    expect(await counter.take('org_b', 1, 60_001)).toBe(1);
    expect(await counter.take('org_a', 1, 60_002)).toBe(0);
  });
});

describe('WebhookProvider against a node:http receiver', () => {
  it('sends the body as UTF-8 with its byte length and valid signatures, ASCII or not', async () => {
    const received: Array<{ body: Buffer; headers: http.IncomingHttpHeaders }> = [];
    const server = http.createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        received.push({ body: Buffer.concat(chunks), headers: request.headers });
        response.end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const origin = { instance: 'gw', environment: 'test' };
    const http1 = new AlertHttpClient();
    const provider = new WebhookProvider(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, 'k', origin, http1);
    const plain = testAlert(0);
    const accented: Alert = { ...plain, message: 'Agent Zoë – “quoted” 🚨', entry: { ...plain.entry, agentName: 'Zoë' } };
    try {
      const outcomes = await Promise.all([plain, accented].map((alert) => provider.send(alert).then(() => 'sent', (error: Error) => error.message)));
      expect(outcomes).toEqual(['sent', 'sent']);
      for (const [index, alert] of [plain, accented].entries()) {
        const { body, headers } = received[index];
        expect(body.equals(Buffer.from(webhookBody(alert, origin), 'utf8'))).toBe(true);
        expect(headers['x-service-signature']).toBe(`sha256=${createHmac('sha256', 'k').update(body).digest('hex')}`);
        expect(headers['x-service-signature-v2']).toBe(`sha256=${createHmac('sha256', 'k').update(`${headers['x-service-timestamp']}.`).update(body).digest('hex')}`);
      }
    } finally {
      await provider.close();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

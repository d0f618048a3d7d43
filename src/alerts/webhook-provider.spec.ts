import { createHmac } from 'node:crypto';
import { testAlert } from './alert';
import { LocalAlertRateCounter } from './alert-rate-counter';
import { webhookBody, webhookHeaders } from './webhook-provider';

describe('webhook signatures', () => {
  const alert = testAlert(0);
  const body = webhookBody(alert, { instance: 'gw', environment: 'test' });

  it('sign the raw body (SPEC.md) and `<timestamp>.<body>` (replay-proof) with the secret', () => {
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

describe('LocalAlertRateCounter', () => {
  it('allows `limit` alerts per clock minute, the first ones of a batch', async () => {
    const counter = new LocalAlertRateCounter(3);
    expect(await counter.take(2, 60_000)).toBe(2);
    expect(await counter.take(2, 60_500)).toBe(1);
    expect(await counter.take(1, 119_999)).toBe(0);
    expect(await counter.take(5, 120_000)).toBe(3);
  });
});

import { decisionDetails, firedAlertsIn, ingestedDetails, MAX_ALERT_TEXT, MAX_FIRED_ALERTS } from './decision-details';

const FIRED = { policy: 'watch', rule: 'watched', reason: 'Watched path read' };

describe('decision details', () => {
  it('name the alert rules that fired, and nothing when none did', () => {
    expect(decisionDetails({ effect: 'allow', policy: 'watch', rule: null, reason: 'allowed', alerts: [FIRED] })).toEqual({ alerts: [FIRED] });
    expect(decisionDetails({ effect: 'deny', policy: 'watch', rule: 'x', reason: 'no' })).toBeNull();
    expect(decisionDetails({ effect: 'allow', policy: 'watch', rule: null, reason: 'allowed', alerts: [] })).toBeNull();
  });

  it('name the rate limit that tripped', () => {
    const rateLimit = { limit: '10/1m per_agent', retryAfterSeconds: 12 };
    expect(decisionDetails({ effect: 'deny', policy: 'limits', rule: 'r', reason: 'slow down', rateLimit })).toEqual({ rateLimit });
    expect(decisionDetails({ effect: 'deny', policy: 'limits', rule: 'r', reason: 'slow down', rateLimit, alerts: [FIRED] })).toEqual({ alerts: [FIRED], rateLimit });
  });

  it('take from an ingested entry a well-formed rate limit only', () => {
    const rateLimit = { limit: '10/1m per_agent', retryAfterSeconds: 12 };
    expect(ingestedDetails({ rateLimit })).toEqual({ rateLimit });
    expect(ingestedDetails({ rateLimit, extra: 'dropped' })).toEqual({ rateLimit });
    expect(ingestedDetails({ rateLimit: { limit: 10, retryAfterSeconds: 12 } })).toBeNull();
    expect(ingestedDetails({ rateLimit: { limit: 'x', retryAfterSeconds: -1 } })).toBeNull();
    expect(ingestedDetails({ rateLimit: 'x', alerts: [FIRED] })).toEqual({ alerts: [FIRED] });
  });

  it('take from an ingested entry its session, budget and reservation when well formed', () => {
    const session = { id: 's-1', labels: ['private_data'], agentLabels: [], labelsAdded: ['private_data'] };
    const budget = { limit: '100/1h per_agent budget', retryAfterSeconds: 30 };
    expect(ingestedDetails({ session, budget, reserved: 10 })).toEqual({ session, budget, reserved: 10 });
    expect(ingestedDetails({ session: { ...session, labels: ['Not A Word'] } })).toBeNull();
    expect(ingestedDetails({ session: { ...session, id: 'x'.repeat(129) } })).toBeNull();
    expect(ingestedDetails({ reserved: -1 })).toBeNull();
    expect(ingestedDetails({ reserved: 5, session: 'x' })).toEqual({ reserved: 5 });
  });

  it('take from an ingested entry only well-formed alerts, at most MAX_FIRED_ALERTS of them', () => {
    expect(firedAlertsIn({ alerts: [FIRED] })).toEqual([FIRED]);
    expect(firedAlertsIn(null)).toEqual([]);
    expect(firedAlertsIn('alerts')).toEqual([]);
    expect(firedAlertsIn({ alerts: 'x' })).toEqual([]);
    expect(firedAlertsIn({ alerts: [{ policy: 'p', rule: 3, reason: 'r' }, null, FIRED] })).toEqual([FIRED]);
    expect(firedAlertsIn({ alerts: Array.from({ length: 100 }, () => FIRED) })).toHaveLength(MAX_FIRED_ALERTS);
  });

  it('keep an alert whose texts are too long, cut as the sidecar cuts them (once or twice, the same text)', () => {
    const cut = `${'x'.repeat(MAX_ALERT_TEXT)}…[truncated]`;
    expect(firedAlertsIn({ alerts: [{ ...FIRED, reason: 'x'.repeat(5000) }] })).toEqual([{ ...FIRED, reason: cut }]);
    expect(firedAlertsIn({ alerts: [{ ...FIRED, reason: cut }] })).toEqual([{ ...FIRED, reason: cut }]);
  });
});

import type { AuditRecord } from '../../core/audit-record/audit-record';
import type { DecisionEvent } from '../../core/decision/decision-events';
import type { Decision } from '../../core/policy-engine/types';
import { activeTriggers, alertsOf, raiseAlerts } from './alert-triggers';

function event(entry: Partial<AuditRecord>, decision: Partial<Decision> = {}): DecisionEvent {
  const full: AuditRecord & { id: string } = {
    id: 'aud_1',
    ts: 0,
    orgId: 'org_1',
    source: 'proxy',
    kind: 'decision',
    traceId: 't1',
    agentId: 'agent_1',
    agentName: 'bot',
    trustTier: 'verified',
    action: 'read:files/a',
    method: 'GET',
    path: '/files/a',
    decision: 'allow',
    enforced: true,
    rateLimited: false,
    policyName: 'p',
    rule: null,
    reason: 'r',
    decisionLatencyMs: 0,
    latencyMs: 0,
    status: 200,
    upstreamStatus: 200,
    delegationChain: null,
    input: null,
    details: null,
    ...entry,
  };
  return { entry: full, decision: { effect: full.decision, policy: 'p', rule: null, reason: 'r', ...decision } };
}

const ALL = activeTriggers(['all']);
const denial = { decision: 'deny' as const, status: 403, upstreamStatus: null };

describe('alertsOf: triggers and severity (docs/alerts.md)', () => {
  it.each([
    ['a denial', denial, 'deny', 'warning'],
    ['a denial of a privileged agent', { ...denial, trustTier: 'privileged' }, 'deny', 'critical'],
    ['a denial on an admin path', { ...denial, action: 'delete:api/admin/users', path: '/api/admin/users' }, 'deny', 'critical'],
    ['a denial of an admin action without a path (PDP)', { ...denial, action: 'admin:reset', method: null, path: null }, 'deny', 'critical'],
    ['a denial on a path merely containing admin', { ...denial, action: 'read:administrators', path: '/administrators' }, 'deny', 'warning'],
    ['a PDP denial of a resource under /admin', { ...denial, action: 'FilePlugin.DeleteFile', method: null, path: null, input: { resource: '/admin/users.db' } }, 'deny', 'critical'],
    ['a PDP denial of another resource', { ...denial, action: 'FilePlugin.DeleteFile', method: null, path: null, input: { resource: '/data/users.db' } }, 'deny', 'warning'],
    ['a denial MODE=audit let through', { ...denial, enforced: false, status: 200 }, 'deny', 'warning'],
    ['a rate-limited denial', { ...denial, status: 429, rateLimited: true }, 'rate_limit', 'warning'],
    ['a rate-limited denial of a privileged agent', { ...denial, status: 429, rateLimited: true, trustTier: 'privileged' }, 'rate_limit', 'warning'],
    ['an upstream 500', { status: 500, upstreamStatus: 500 }, 'error', 'critical'],
    ['the gateway’s 502', { status: 502, upstreamStatus: null }, 'error', 'critical'],
    ['an upstream 503 its caller left before receiving (499)', { status: 499, upstreamStatus: 503 }, 'error', 'critical'],
  ] as const)('%s: %s, %s', (_, entry, trigger, severity) => {
    const alerts = alertsOf(event(entry), ALL);
    expect(alerts.map((alert) => [alert.trigger, alert.severity])).toEqual([[trigger, severity]]);
  });

  it.each([
    ['an allow', {}],
    ['a 4xx from the upstream', { status: 404, upstreamStatus: 404 }],
    ['a 499 (client went away)', { status: 499 }],
  ])('%s raises nothing', (_, entry) => {
    expect(raiseAlerts(event(entry), ALL, [])).toBe(0);
    expect(alertsOf(event(entry), ALL)).toEqual([]);
  });

  it('raises only the triggers ALERT_ON names', () => {
    const denyOnly = activeTriggers(['deny']);
    expect(alertsOf(event({ status: 500 }), denyOnly)).toEqual([]);
    expect(alertsOf(event({ ...denial, rateLimited: true }), denyOnly)).toEqual([]);
    expect(alertsOf(event(denial), denyOnly)).toHaveLength(1);
    expect(alertsOf(event(denial), activeTriggers([]))).toEqual([]);
  });

  it('raises every fired alert rule whatever ALERT_ON says, with the rule in the entry', () => {
    const fired = [{ policy: 'watch', rule: 'w1', reason: 'Look at this' }];
    const alerts = alertsOf(event({}, { alerts: fired }), activeTriggers([]));
    expect(alerts).toMatchObject([{ trigger: 'alert_rule', severity: 'warning', entry: { policyName: 'watch', reason: 'Look at this', decision: 'allow' } }]);
    expect(alerts[0].message).toContain('Look at this');
  });

  it('says why no upstream answer came without naming the gateway, since a sidecar may have forwarded the request', () => {
    const message = (status: number) => alertsOf(event({ source: 'sidecar', status, upstreamStatus: null }), ALL)[0].message;
    expect(message(502)).toContain('the upstream could not be reached');
    expect(message(504)).toContain('the upstream did not answer in time');
    expect(message(502)).not.toContain('gateway');
  });

  it('fills the entry fields of docs/alerts.md, empty strings where the entry has none', () => {
    const [alert] = alertsOf(event({ ...denial, ts: Date.UTC(2026, 0, 2), traceId: null, method: null, path: null }), ALL);
    expect(alert.timestamp).toBe('2026-01-02T00:00:00.000Z');
    expect(alert.id).toMatch(/^alert_[0-9a-f]{24}$/);
    expect(alert.entry).toEqual({ traceId: '', agentId: 'agent_1', agentName: 'bot', trustTier: 'verified', action: 'read:files/a', method: '', path: '', decision: 'deny', policyName: 'p', reason: 'r' });
  });
});

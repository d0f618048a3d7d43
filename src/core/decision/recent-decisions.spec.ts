import pino from 'pino';
import type { Decision } from '../policy-engine/types';
import type { AuditRecord } from '../audit-record/audit-record';
import { DecisionEvents } from './decision-events';
import { MAX_REMEMBERED_DECISIONS, RecentDecisions } from './recent-decisions';

const HOUR_MS = 60 * 60 * 1000;
const START_MS = Date.UTC(2026, 0, 1);

function entry(id: string, ts = START_MS, overrides: Partial<AuditRecord> = {}): AuditRecord & { id: string } {
  return {
    id,
    ts,
    orgId: 'org-1',
    source: 'check',
    kind: 'decision',
    traceId: null,
    agentId: 'agent-1',
    agentName: null,
    trustTier: null,
    action: 'call',
    method: null,
    path: null,
    decision: 'allow',
    enforced: true,
    rateLimited: false,
    policyName: null,
    rule: null,
    reason: null,
    decisionLatencyMs: null,
    latencyMs: null,
    status: null,
    upstreamStatus: null,
    delegationChain: null,
    input: { plugin: 'crm', function: 'read' },
    details: null,
    ...overrides,
  };
}

const DECISION = { allowed: true } as unknown as Decision;

function remembering(): { events: DecisionEvents; recent: RecentDecisions } {
  const events = new DecisionEvents(pino({ level: 'silent' }));
  return { events, recent: new RecentDecisions(events) };
}

describe('RecentDecisions', () => {
  it('answers a decision made here with what an outcome is checked against', () => {
    const { events, recent } = remembering();
    events.emit({ entry: entry('d-1'), decision: DECISION });
    expect(recent.get('d-1', START_MS + 1000)).toEqual({ orgId: 'org-1', agentId: 'agent-1', plugin: 'crm', function: 'read', allowed: true, policyName: null, rule: null, reason: null, atMs: START_MS });
  });

  it('does not remember proxy decisions, and forgets a decision after an hour', () => {
    const { events, recent } = remembering();
    events.emit({ entry: entry('p-1', START_MS, { source: 'proxy' }), decision: DECISION });
    events.emit({ entry: entry('d-1'), decision: DECISION });
    expect(recent.get('p-1', START_MS)).toBeUndefined();
    expect(recent.get('d-1', START_MS + HOUR_MS - 1)).toBeDefined();
    expect(recent.get('d-1', START_MS + HOUR_MS)).toBeUndefined();
  });

  it('at its bound forgets the oldest decision and keeps the newest', () => {
    const { events, recent } = remembering();
    for (let index = 0; index <= MAX_REMEMBERED_DECISIONS; index += 1) events.emit({ entry: entry(`d-${index}`), decision: DECISION });
    expect(recent.get('d-0', START_MS)).toBeUndefined();
    expect(recent.get('d-1', START_MS)).toBeDefined();
    expect(recent.get(`d-${MAX_REMEMBERED_DECISIONS}`, START_MS)).toBeDefined();
  });
});

import type { Decision } from '../policy-engine/types';
import { approvalBody, denialBody, limitBody, limitError, Outcome, outcomeOf, statusOf, AnsweredVerdict } from './verdict-answer';

const TRIP = { limit: '10/1m per_agent', retryAfterSeconds: 12 };
const DENY: Decision = { effect: 'deny', policy: 'p', rule: 'r', reason: 'no' };

function verdict(decision: Decision, extra: Partial<AnsweredVerdict> = {}): AnsweredVerdict {
  return { id: 'aud_1', decision, enforced: true, request: { traceId: 't-1', action: 'write:x' }, ...extra };
}

describe('verdict to answer', () => {
  it.each<[string, AnsweredVerdict, Outcome['kind'], number, number]>([
    ['an allow', verdict({ effect: 'allow', policy: 'p', rule: null, reason: 'ok' }), 'allowed', 200, 200],
    ['a denial MODE=audit lets through', verdict(DENY, { enforced: false }), 'allowed', 200, 200],
    ['a tripped rate limit under MODE=audit', verdict({ ...DENY, rateLimit: TRIP }, { enforced: false }), 'allowed', 200, 200],
    ['a denial', verdict(DENY), 'denied', 403, 200],
    ['a tripped rate limit', verdict({ ...DENY, rateLimit: TRIP }), 'limited', 429, 429],
    ['a spent budget', verdict({ ...DENY, budget: TRIP }), 'limited', 429, 429],
    ['a held request', verdict(DENY, { pending: { approvalId: 'appr_1', expiresAt: '2026-12-02T00:00:00.000Z' } }), 'pending', 202, 202],
    ['a held request over a rate limit', verdict({ ...DENY, rateLimit: TRIP }, { pending: { approvalId: 'appr_1', expiresAt: '2026-12-02T00:00:00.000Z' } }), 'pending', 202, 202],
  ])('answers %s alike on every transport', (_what, given, kind, refusing, reporting) => {
    const outcome = outcomeOf(given);
    expect([outcome.kind, statusOf(outcome, 'refusing'), statusOf(outcome, 'reporting')]).toEqual([kind, refusing, reporting]);
  });

  it('gives the 429 body of docs/proxy.md "Answers", and the error a reporting transport throws with the policy and decision id', () => {
    const limited = verdict({ ...DENY, budget: TRIP });
    const outcome = outcomeOf(limited);
    if (outcome.kind !== 'limited') throw new Error('not limited');
    expect(limitBody(outcome)).toEqual({ error: 'budget_exceeded', message: 'Budget exceeded: no', retry_after: 12, limit: '10/1m per_agent' });
    const error = limitError(limited, outcome);
    expect([error.status, error.toBody()]).toEqual([429, { error: 'budget_exceeded', message: 'Budget exceeded: no', retry_after: 12, limit: '10/1m per_agent', policy: 'p', decisionId: 'aud_1' }]);
  });

  it('gives the 403 and 202 bodies', () => {
    expect(denialBody(verdict(DENY))).toEqual({ error: 'forbidden', message: 'Denied by policy p: no', reason: 'no', policy: 'p', action: 'write:x', trace_id: 't-1' });
    const held = verdict(DENY, { pending: { approvalId: 'appr_1', expiresAt: '2026-12-02T00:00:00.000Z' } });
    expect(approvalBody(held, 'X-Service-Approval')).toEqual({
      error: 'approval_required',
      approvalId: 'appr_1',
      expiresAt: '2026-12-02T00:00:00.000Z',
      message: "Waiting for a person's approval (p: no); retry with X-Service-Approval: appr_1 once approved",
      policy: 'p',
      reason: 'no',
      trace_id: 't-1',
    });
  });
});

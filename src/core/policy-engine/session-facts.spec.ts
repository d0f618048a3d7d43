import { compilePolicies } from './compile-policies';
import { InMemoryBudgetLedger } from './budget-ledger';
import { PolicyLoadError } from './errors';
import { loadPolicyFile } from './loader';
import { SlidingWindowLimiter } from './sliding-window-limiter';
import type { BudgetHold, Decision, DecisionInput, EvaluationEnv, SessionFacts } from './types';

/** Session labels, call sequences and budgets (docs/policies.md "Sessions"). */

function input(action: string, session?: Partial<SessionFacts>): DecisionInput {
  const asked: DecisionInput = {
    agent: { id: 'agent_1', name: 'bot', trust_tier: 'verified', tags: [], org: 'org_1' },
    action,
    resource: '',
    plugin: 'mcp',
    function: action,
    args: {},
    context: {},
    delegation: { depth: 1, chain: [] },
  };
  if (session !== undefined) asked.session = { id: 's1', labels: [], agent_labels: [], calls: {}, ...session };
  return asked;
}

const THREE_STEP = `
policies:
  - name: exfiltration
    rules:
      - name: reads-private
        condition: action starts_with "read:customers/"
        action: label
        labels: [private_data]
        reason: Customer records read
      - name: reads-web
        condition: action starts_with "fetch:web/"
        action: label
        labels: [untrusted_content]
        scope: agent
        ttl: 24h
        reason: Untrusted page fetched
      - name: no-way-out
        condition: action starts_with "call:mail/" and session.labels.has("private_data") and (session.labels.has("untrusted_content") or agent.labels.has("untrusted_content"))
        action: deny
        reason: Private data and untrusted content in one session; nothing leaves by mail
`;

function env(nowMs = 0, ledger = new InMemoryBudgetLedger()): EvaluationEnv & { holds: BudgetHold[] } {
  return { limiter: new SlidingWindowLimiter(), nowMs, budgets: ledger, holds: [] };
}

describe('label rules', () => {
  const set = compilePolicies(loadPolicyFile(THREE_STEP, 'p.yaml'));

  it('fire without deciding and carry their labels in the decision', () => {
    const decided = set.evaluate(input('read:customers/7', {}), env()) as Decision;
    expect(decided.effect).toBe('allow');
    expect(decided.labels).toEqual([{ policy: 'exfiltration', rule: 'reads-private', labels: ['private_data'], scope: 'session', ttlMs: 0 }]);
    const agentScoped = set.evaluate(input('fetch:web/page', {}), env()) as Decision;
    expect(agentScoped.labels).toEqual([{ policy: 'exfiltration', rule: 'reads-web', labels: ['untrusted_content'], scope: 'agent', ttlMs: 86_400_000 }]);
  });

  it('conditions read session.labels and agent.labels: the third step is denied', () => {
    expect((set.evaluate(input('call:mail/send', { labels: ['private_data'] }), env()) as Decision).effect).toBe('allow');
    expect((set.evaluate(input('call:mail/send', { labels: ['private_data', 'untrusted_content'] }), env()) as Decision).rule).toBe('no-way-out');
    expect((set.evaluate(input('call:mail/send', { labels: ['private_data'], agent_labels: ['untrusted_content'] }), env()) as Decision).rule).toBe('no-way-out');
  });

  it('read as empty without session facts', () => {
    expect((set.evaluate(input('call:mail/send'), env()) as Decision).effect).toBe('allow');
    expect(set.usesSession).toBe(true);
  });
});

describe('session.called and session.count', () => {
  const set = compilePolicies(
    loadPolicyFile(
      `
policies:
  - name: sequences
    rules:
      - name: read-then-mail
        condition: action == "call:mail/send" and session.called("read:customers/*")
        action: deny
        reason: no mail after reading customers
      - name: too-many-mails
        condition: session.count("call:mail/*") >= 3
        action: deny
        reason: three mails a session
`,
      'p.yaml',
    ),
  );

  it('see the calls of the session', () => {
    expect((set.evaluate(input('call:mail/send', { calls: { 'read:orders/1': 4 } }), env()) as Decision).effect).toBe('allow');
    expect((set.evaluate(input('call:mail/send', { calls: { 'read:customers/1': 1 } }), env()) as Decision).rule).toBe('read-then-mail');
    expect((set.evaluate(input('call:mail/draft', { calls: { 'call:mail/send': 2, 'call:mail/draft': 1 } }), env()) as Decision).rule).toBe('too-many-mails');
    expect((set.evaluate(input('call:mail/draft', { calls: { 'call:mail/send': 2 } }), env()) as Decision).effect).toBe('allow');
  });

  it('fold case where they deny, so a deny is not evaded by the case of an action', () => {
    expect((set.evaluate(input('call:mail/send', { calls: { 'read:Customers/1': 1 } }), env()) as Decision).rule).toBe('read-then-mail');
  });
});

describe('budgets', () => {
  const set = compilePolicies(
    loadPolicyFile(
      `
policies:
  - name: spend
    rules:
      - name: daily
        condition: budget(per_agent, 10, 1d)
        action: deny
        cost: 4
        reason: Daily budget spent
`,
      'p.yaml',
    ),
  );

  it('reserve the rule cost before the call, and deny once it does not fit, with budget_exceeded facts', () => {
    const ledger = new InMemoryBudgetLedger();
    const first = env(0, ledger);
    expect((set.evaluate(input('x'), first) as Decision).effect).toBe('allow');
    expect(first.holds).toHaveLength(1);
    expect(first.holds[0].cost).toBe(4);
    expect((set.evaluate(input('x'), env(1, ledger)) as Decision).effect).toBe('allow');
    const third = set.evaluate(input('x'), env(2, ledger)) as Decision;
    expect(third.effect).toBe('deny');
    expect(third.budget).toEqual({ limit: '10/1d per_agent budget', retryAfterSeconds: 86_400 });
    expect(third.rateLimit).toBeUndefined();
  });

  it('take back what a settled outcome did not spend', () => {
    const ledger = new InMemoryBudgetLedger();
    const first = env(0, ledger);
    set.evaluate(input('x'), first);
    set.evaluate(input('x'), env(1, ledger));
    expect(ledger.settle(first.holds[0], 0, 2)).toBe(true);
    expect((set.evaluate(input('x'), env(3, ledger)) as Decision).effect).toBe('allow');
    expect((set.evaluate(input('x'), env(4, ledger)) as Decision).effect).toBe('deny');
  });

  it('read as spent without a ledger (fail closed)', () => {
    expect((set.evaluate(input('x'), { limiter: new SlidingWindowLimiter(), nowMs: 0 }) as Decision).budget?.limit).toBe('10/1d per_agent budget');
  });

  it('are peeked, not reserved, by explain', () => {
    const ledger = new InMemoryBudgetLedger();
    for (let i = 0; i < 5; i++) expect((set.explain(input('x'), env(i, ledger)) as { decision: Decision }).decision.effect).toBe('allow');
    expect(ledger.spent(`bg:-:spend:0:0:per_agent:agent_1`, 86_400_000, 5)).toBe(0);
  });
});

describe('validation of label and budget rules', () => {
  function errorsOf(yaml: string): string[] {
    try {
      loadPolicyFile(yaml, 'bad.yaml');
    } catch (error) {
      return (error as PolicyLoadError).errors.map((e) => `${e.line}:${e.column}: ${e.message}`);
    }
    return [];
  }
  const rule = (body: string): string => `policies:\n  - name: p\n    rules:\n      - condition: "true"\n        reason: r\n${body}`;

  it.each([
    ['a label that is not a plain word', rule('        action: label\n        labels: [private_data, "Bad Label"]\n'), '7:32: bad label "Bad Label"'],
    ['an unknown label scope', rule('        action: label\n        labels: [x]\n        scope: org\n'), "8:16: 'scope' must be 'session' or 'agent'"],
    ['an agent label without a ttl', rule('        action: label\n        labels: [x]\n        scope: agent\n'), "8:16: a label rule with scope agent needs a 'ttl'"],
    ['a ttl on a session label', rule('        action: label\n        labels: [x]\n        ttl: 1h\n'), "8:14: 'ttl' belongs to label rules with scope agent"],
    ['a label rule without labels', rule('        action: label\n'), "4:9: missing required field 'labels'"],
    ['labels on a deny rule', rule('        action: deny\n        labels: [x]\n'), "7:17: 'labels' belongs to rules with action label"],
    ['a non-positive budget limit', 'policies:\n  - name: p\n    rules:\n      - condition: budget(per_agent, 0, 1h)\n        action: deny\n        reason: r\n', '4:38: bad budget limit'],
    ['an unknown budget scope', 'policies:\n  - name: p\n    rules:\n      - condition: budget(per_moon, 5, 1h)\n        action: deny\n        reason: r\n', '4:27: bad budget scope'],
    ['a budget in an allow rule', 'policies:\n  - name: p\n    rules:\n      - condition: budget(per_agent, 5, 1h)\n        action: allow\n        reason: r\n', '5:17: a rule calling budget(...) must deny'],
    ['a negated budget', 'policies:\n  - name: p\n    rules:\n      - condition: not budget(per_agent, 5, 1h)\n        action: deny\n        reason: r\n', '4:24: budget(...) cannot be negated'],
    ['a negative cost', 'policies:\n  - name: p\n    rules:\n      - condition: budget(per_agent, 5, 1h)\n        action: deny\n        cost: -1\n        reason: r\n', "6:15: 'cost' must be a number above 0"],
    ['a cost without a budget', rule('        action: deny\n        cost: 2\n'), "7:15: 'cost' belongs to rules whose condition calls budget(...)"],
    ['a bad session.called glob', 'policies:\n  - name: p\n    rules:\n      - condition: session.called("read:[a]")\n        action: deny\n        reason: r\n', '4:35: bad glob in session.called()'],
    ['session.count as a condition', 'policies:\n  - name: p\n    rules:\n      - condition: session.count("x")\n        action: deny\n        reason: r\n', '4:20: session.count(...) is a number'],
    ['an unknown session field', 'policies:\n  - name: p\n    rules:\n      - condition: session.user == "x"\n        action: deny\n        reason: r\n', "4:28: unknown session field 'user'"],
  ])('refuse %s, with its position', (_what, yaml, expected) => {
    const errors = errorsOf(yaml);
    expect(errors.map((error) => error.slice(0, expected.length))).toContain(expected);
  });
});

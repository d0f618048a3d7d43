import { DecisionCache } from '../src/decision-cache';
import { callOptions, resolveOptions } from '../src/options';
import type { CheckRequest, GatewayDecision } from '../src/transport';

/** The options' defaults and per-plugin resolution, and the cache's TTL and version rules. */

const REQUIRED = { gatewayUrl: 'https://gateway.example:8443/', apiKey: 'agk_x', agentId: 'agent_1' };

describe('options', () => {
  it('fills in the defaults of the SDK README', () => {
    expect(resolveOptions(REQUIRED)).toMatchObject({
      gatewayUrl: 'https://gateway.example:8443',
      defaultTrustTier: 'standard',
      throwOnDenied: true,
      timeoutSeconds: 5,
      grpcAddress: 'gateway.example:50051',
      failureMode: 'fail-closed',
      cache: true,
    });
  });

  it.each(['gatewayUrl', 'apiKey', 'agentId'] as const)('requires %s', (name) => {
    expect(() => resolveOptions({ ...REQUIRED, [name]: '' })).toThrow(`${name} is required`);
  });

  it('refuses an unknown failure mode and a non-positive timeout', () => {
    expect(() => resolveOptions({ ...REQUIRED, failureMode: 'fail-sometimes' as 'fail-open' })).toThrow('failureMode must be fail-closed or fail-open');
    expect(() => resolveOptions({ ...REQUIRED, timeoutSeconds: 0 })).toThrow('timeoutSeconds must be a positive number');
  });

  it('bounds approvalWaitSeconds: 300 by default, 0 to 3600', () => {
    expect(resolveOptions(REQUIRED).approvalWaitSeconds).toBe(300);
    expect(resolveOptions({ ...REQUIRED, approvalWaitSeconds: 0 }).approvalWaitSeconds).toBe(0);
    for (const bad of [-1, 3601, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => resolveOptions({ ...REQUIRED, approvalWaitSeconds: bad })).toThrow('approvalWaitSeconds must be between 0 and 3600');
    }
  });

  // A batch of 0.5 events took none and looped without yielding (the event loop starved); a
  // timer past 2^31-1 ms fires after 1 ms in Node, so every HTTP check timed out at once.
  it('refuses a batch size that is not a whole number and durations Node timers cannot hold', () => {
    expect(() => resolveOptions({ ...REQUIRED, auditBatchSize: 0.5 })).toThrow('auditBatchSize must be a whole number from 1 to 500');
    expect(() => resolveOptions({ ...REQUIRED, auditBatchSize: 2.5 })).toThrow('auditBatchSize must be a whole number from 1 to 500');
    // POST /v1/audit takes at most 500 events in one batch.
    expect(() => resolveOptions({ ...REQUIRED, auditBatchSize: 501 })).toThrow('auditBatchSize must be a whole number from 1 to 500');
    expect(() => resolveOptions({ ...REQUIRED, timeoutSeconds: 30 * 86_400 })).toThrow('timeoutSeconds must be at most 2147483.647');
    expect(() => resolveOptions({ ...REQUIRED, auditFlushMs: 2 ** 31 })).toThrow('auditFlushMs must be at most 2147483647');
    const options = resolveOptions({ ...REQUIRED, plugins: { SlowPlugin: { timeoutSeconds: 30 * 86_400 } } });
    expect(() => callOptions(options, 'SlowPlugin')).toThrow('plugins.SlowPlugin.timeoutSeconds must be at most 2147483.647');
    expect(resolveOptions({ ...REQUIRED, auditBatchSize: 1, timeoutSeconds: 2_147_483.647, auditFlushMs: 2 ** 31 - 1 })).toMatchObject({ auditBatchSize: 1 });
  });

  it('makes audit events durable once per batch window by default, and refuses an unknown durability', () => {
    expect(resolveOptions(REQUIRED)).toMatchObject({ auditDurability: 'batch', auditLogPath: null });
    expect(resolveOptions({ ...REQUIRED, auditDurability: 'sync' }).auditDurability).toBe('sync');
    expect(() => resolveOptions({ ...REQUIRED, auditDurability: 'never' as 'sync' })).toThrow('auditDurability must be batch or sync, not never');
  });

  it('applies a plugin override over the client-wide values, and only to that plugin', () => {
    const options = resolveOptions({ ...REQUIRED, defaultTrustTier: 'elevated', plugins: { FilePlugin: { trustTier: 'restricted', timeoutSeconds: 0.5, throwOnDenied: false } } });
    expect(callOptions(options, 'FilePlugin')).toEqual({ trustTier: 'restricted', timeoutMs: 500, throwOnDenied: false });
    expect(callOptions(options, 'OtherPlugin')).toEqual({ trustTier: 'elevated', timeoutMs: 5000, throwOnDenied: true });
    expect(callOptions(options, 'constructor')).toEqual({ trustTier: 'elevated', timeoutMs: 5000, throwOnDenied: true });
  });
});

describe('DecisionCache', () => {
  const request: CheckRequest = { agentId: 'agent_1', plugin: 'P', function: 'f', args: { a: 1 }, context: {}, trustTier: 'standard' };
  const decision = (overrides: Partial<GatewayDecision> = {}): GatewayDecision => ({
    decision: 'allow', reason: '', policy: 'p', rule: '', policyVersion: 3, traceId: 't', decisionId: 'aud_1', cacheable: true, cacheTtlMs: 60_000, enforced: true, approvalId: '', approvalExpiresAt: '', ...overrides,
  });

  it('hashes every part of the question', () => {
    const base = DecisionCache.hashOf(request);
    expect(DecisionCache.hashOf({ ...request })).toBe(base);
    for (const change of [{ agentId: 'agent_2' }, { plugin: 'Q' }, { function: 'g' }, { args: { a: 2 } }, { context: { x: 1 } }, { trustTier: 'elevated' }]) {
      expect(DecisionCache.hashOf({ ...request, ...change })).not.toBe(base);
    }
  });

  it('keeps cacheable answers for their TTL only', () => {
    jest.useFakeTimers({ now: 1_000_000 });
    try {
      const cache = new DecisionCache();
      cache.put('h', decision({ cacheTtlMs: 1000 }));
      cache.put('n', decision({ cacheable: false, cacheTtlMs: 0 }));
      expect(cache.get('h')).toMatchObject({ decisionId: 'aud_1' });
      expect(cache.get('n')).toBeUndefined();
      jest.advanceTimersByTime(1001);
      expect(cache.get('h')).toBeUndefined();
    } finally {
      jest.useRealTimers();
    }
  });

  it('a newer policy version empties it, and an answer made on an older one is not kept', () => {
    const cache = new DecisionCache();
    cache.put('h', decision());
    cache.invalidate(4);
    expect(cache.get('h')).toBeUndefined();
    cache.put('h', decision({ policyVersion: 3 }));
    expect(cache.get('h')).toBeUndefined();
    cache.put('h', decision({ policyVersion: 5, decisionId: 'aud_5' }));
    expect(cache.version).toBe(5);
    expect(cache.get('h')).toMatchObject({ decisionId: 'aud_5' });
  });

  // First in, first out through a ring of keys (src/decision-cache.ts states the bound and cost).
  it('holds at most its bound, evicting the entry put longest ago, one at a time', () => {
    const cache = new DecisionCache(3);
    for (const key of ['a', 'b', 'c']) cache.put(key, decision({ decisionId: `aud_${key}` }));
    cache.put('a', decision({ decisionId: 'aud_a2' }));
    expect(cache.size).toBe(3);
    cache.put('d', decision({ decisionId: 'aud_d' }));
    expect(cache.size).toBe(3);
    expect(cache.get('a')).toBeUndefined();
    expect(['b', 'c', 'd'].map((key) => cache.get(key)?.decisionId)).toEqual(['aud_b', 'aud_c', 'aud_d']);
    cache.invalidate(4);
    for (let index = 0; index < 10; index++) cache.put(`k${index}`, decision({ policyVersion: 4 }));
    expect(cache.size).toBe(3);
    expect(['k7', 'k8', 'k9'].every((key) => cache.get(key) !== undefined)).toBe(true);
  });

  it('starts again from the version a stream resumes from when it is below the newest seen (a restored gateway)', () => {
    const cache = new DecisionCache();
    cache.invalidate(10_000);
    cache.put('h', decision({ policyVersion: 15 }));
    expect(cache.get('h')).toBeUndefined();
    cache.resumeFrom(15);
    expect(cache.version).toBe(15);
    cache.put('h', decision({ policyVersion: 15, decisionId: 'aud_15' }));
    expect(cache.get('h')).toMatchObject({ decisionId: 'aud_15' });
    cache.resumeFrom(20);
    expect(cache.version).toBe(15);
    expect(cache.get('h')).toMatchObject({ decisionId: 'aud_15' });
  });
});

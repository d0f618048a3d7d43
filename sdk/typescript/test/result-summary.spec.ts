import fs from 'node:fs';
import path from 'node:path';
import { GatewayUnavailableError, GovernanceClient, summaryOf } from '../src';
import { raisedSummary } from '../src/result-summary';
import { AuditEntry, FIXTURES, forwarder, freePort, SdkGateway, sleep, stalledServer, tempWal } from './support/sdk-gateway';

/**
 * The default result summary: the rule and cases every SDK shares
 * (sdk/fixtures/result-summaries.json), then the JavaScript values JSON has no word for.
 */

interface SummaryCases {
  cases: Array<{ name: string; value: unknown; summary: string }>;
  withoutDecision: {
    value: unknown;
    cases: Array<{ name: string; failureMode: 'fail-closed' | 'fail-open'; cause: 'timeout' | 'unreachable'; check: string | null; guard: string | null }>;
  };
}

const SHARED = JSON.parse(fs.readFileSync(path.join(FIXTURES, 'result-summaries.json'), 'utf8')) as SummaryCases;

class Customer {
  constructor(readonly iban: string) {}
}

class LookupError extends Error {}

describe('summaryOf', () => {
  it.each(SHARED.cases.map((each) => [each.name, each.value, each.summary] as const))('the shared case: %s', (_name, value, summary) => {
    expect(summaryOf(value)).toBe(summary);
  });

  it.each([
    ['undefined', undefined, 'returned null'],
    ['a Buffer', Buffer.from('secret'), 'returned binary of 6 bytes'],
    ['an ArrayBuffer', new ArrayBuffer(1), 'returned binary of 1 byte'],
    ['a Set', new Set(['a', 'b']), 'returned list of 2 items'],
    ['a Map', new Map([['iban', 'DE89']]), 'returned object of 1 key'],
    ['an object without a prototype', Object.assign(Object.create(null) as object, { a: 1, b: 2 }), 'returned object of 2 keys'],
    ['a class instance, by its type only', new Customer('DE89370400440532013000'), 'returned Customer'],
    ['a bigint', 10n, 'returned number'],
    ['a function', () => 1, 'returned function'],
  ])('%s', (_name, value, summary) => {
    expect(summaryOf(value)).toBe(summary);
  });
});

describe('the summary of a call that threw', () => {
  it.each([
    ['an Error', new Error('token abc123 refused'), 'raised Error'],
    ['a subclass, by its class', new LookupError('no customer DE89'), 'raised LookupError'],
    ['a TypeError', new TypeError('x is not a function'), 'raised TypeError'],
    ['a thrown string, never quoted', 'password=hunter2', 'raised string'],
    ['a thrown object', { code: 7 }, 'raised object'],
  ])('%s', (_name, error, summary) => {
    expect(raisedSummary(error)).toBe(summary);
  });
});

// The texts of sdk/fixtures/result-summaries.json `withoutDecision`, as the gateway's trail holds
// them: gRPC stalls (timeout) or nothing listens (unreachable, the gateway then coming back at
// the HTTP address, as the fail-open test of failure-modes.spec.ts does).
describe('the audit text of a decision made without the gateway', () => {
  let gateway: SdkGateway;
  let stalled: Awaited<ReturnType<typeof stalledServer>>;

  beforeAll(async () => {
    [gateway, stalled] = await Promise.all([SdkGateway.start(), stalledServer()]);
  }, 120_000);
  afterAll(async () => {
    await stalled?.close();
    await gateway?.stop();
  });

  /** The fixture's text as a pattern: `<why>` names the transport that failed, then anything. */
  function pattern(text: string): RegExp {
    const [before, after] = text.split('<why>').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
    return new RegExp(`^${before}(gRPC|HTTP)\\b.+${after}$`);
  }

  it.each(SHARED.withoutDecision.cases.map((shared) => [shared.name, shared] as const))('%s', async (_name, shared) => {
    const agentId = await gateway.createAgent(`without-decision-${shared.failureMode}-${shared.cause}`);
    const deadPort = await freePort();
    const client = await GovernanceClient.create({
      gatewayUrl: shared.cause === 'timeout' ? gateway.url : `http://127.0.0.1:${deadPort}`,
      grpcAddress: `127.0.0.1:${shared.cause === 'timeout' ? stalled.port : await freePort()}`,
      apiKey: gateway.apiKey,
      agentId,
      auditLogPath: tempWal(),
      failureMode: shared.failureMode,
      throwOnDenied: false,
      timeoutSeconds: 0.3,
      auditFlushMs: 50,
    });
    let back: Awaited<ReturnType<typeof forwarder>> | undefined;
    try {
      if (shared.check === null || shared.guard === null) {
        await expect(client.check('FilePlugin', 'ReadFile', { path: '/tmp/notes.txt' })).rejects.toBeInstanceOf(GatewayUnavailableError);
        await expect(client.guard('FilePlugin', 'ReadText', { path: '/tmp/notes.txt' }, () => SHARED.withoutDecision.value)).rejects.toBeInstanceOf(GatewayUnavailableError);
        expect(client.pendingAudit).toBe(0);
        return;
      }
      await client.check('FilePlugin', 'ReadFile', { path: '/tmp/notes.txt' });
      await client.guard('FilePlugin', 'ReadText', { path: '/tmp/notes.txt' }, () => SHARED.withoutDecision.value);
      if (shared.cause === 'unreachable') back = await forwarder(deadPort, Number(new URL(gateway.url).port));
      for (let waited = 0; client.pendingAudit > 0 && waited < 10_000; waited += 50) {
        await client.flushAudit();
        await sleep(50);
      }
    } finally {
      await client.close();
      await back?.close();
    }
    const recorded = (entry: AuditEntry) => entry.kind === 'outcome';
    const entries = (await gateway.auditEntries(`agentId=${agentId}&source=check`, (found) => found.filter(recorded).length >= 2)).filter(recorded);
    expect(entries.find((entry) => entry.action === 'FilePlugin.ReadFile')?.reason).toMatch(pattern(shared.check));
    expect(entries.find((entry) => entry.action === 'FilePlugin.ReadText')?.reason).toMatch(pattern(shared.guard));
  });
});

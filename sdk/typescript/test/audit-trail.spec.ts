import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { GovernanceClient, GovernanceOptions } from '../src';
import { CountingProxy } from './support/counting-proxy';
import { AuditEntry, DECISION_CASES, SdkGateway, sleep } from './support/sdk-gateway';

/**
 * What reaches the gateway's trail, and how (README "Audit events"): every decision the client
 * applies, cached ones as decision entries naming the decision reused; events in batch bodies,
 * stamped with when the call happened; the default write-ahead file of each client its own, so
 * two processes of one application, or two clients in one, both work, and the files of a
 * process that ended are sent by the next one to start.
 */

const APP = path.join(__dirname, 'support', 'app-process.js');
let gateway: SdkGateway;
const clients: GovernanceClient[] = [];
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-sdk-trail-'));

async function client(options: Partial<GovernanceOptions> = {}): Promise<GovernanceClient> {
  const created = await GovernanceClient.create({
    gatewayUrl: gateway.url,
    grpcAddress: `127.0.0.1:${gateway.grpcPort}`,
    apiKey: gateway.apiKey,
    agentId: gateway.agents.reader,
    auditDirectory: fs.mkdtempSync(path.join(scratch, 'wal-')),
    auditFlushMs: 50,
    ...options,
  });
  clients.push(created);
  return created;
}

beforeAll(async () => {
  if (!fs.existsSync(path.resolve(__dirname, '..', 'dist', 'index.js'))) throw new Error('sdk/typescript/dist is missing: run `npm run build` at the repository root');
  gateway = await SdkGateway.start();
}, 120_000);

afterAll(async () => {
  await Promise.all(clients.map((each) => each.close()));
  await gateway?.stop();
  fs.rmSync(scratch, { recursive: true, force: true });
});

const isOutcome = (entry: AuditEntry) => entry.kind === 'outcome';

describe('cached decisions', () => {
  // sdk/fixtures/decision-cases.json `cachedDenials`, the cases every SDK runs.
  it.each(DECISION_CASES.cachedDenials.map((shared) => [shared.name, shared] as const))('%s', async (_name, shared) => {
    const kind = DECISION_CASES.agents.find((agent) => agent.name === shared.agent)!;
    const agentId = await gateway.createAgent(`cached-${shared.expect.decision}`, kind.trustTier, kind.tags);
    const soft = await client({ agentId, throwOnDenied: false });
    const results = [];
    for (let index = 0; index < shared.calls; index++) results.push(await soft.check(shared.plugin, shared.function, shared.args, shared.context));
    expect(results.every((result) => result.decision === shared.expect.decision && result.policy === shared.expect.policy)).toBe(true);
    expect(results.filter((result) => result.via === 'grpc')).toHaveLength(shared.expect.fromGateway);
    expect(results.filter((result) => result.via === 'cache')).toHaveLength(shared.expect.fromCache);
    await soft.flushAudit();
    const action = `${shared.plugin}.${shared.function}`;
    const decisionEntry = (entry: AuditEntry) => entry.kind === 'decision' && entry.action === action && entry.decision === shared.expect.decision;
    const entries = (await gateway.auditEntries(`agentId=${agentId}`, (found) => found.filter(decisionEntry).length >= shared.expect.trail.decisionEntries)).filter(decisionEntry);
    await sleep(300);
    expect((await gateway.auditEntries(`agentId=${agentId}`, () => true)).filter(decisionEntry)).toHaveLength(shared.expect.trail.decisionEntries);
    const cached = entries.filter((entry) => entry.details?.cached === true);
    expect(cached).toHaveLength(shared.expect.trail.cachedEntries);
    if (shared.expect.trail.cachedNameTheGatewayDecision) {
      for (const entry of cached) expect(entry.details).toMatchObject({ decisionId: results[0].decisionId });
    }
  });

  it('a cached allow run through guard leaves its decision entry and the call outcome', async () => {
    const agentId = await gateway.createAgent('cached-allows');
    const guarded = await client({ agentId });
    expect(await guarded.check('FilePlugin', 'ReadFile', { path: '/tmp/notes.txt' })).toMatchObject({ via: 'grpc' });
    expect(await guarded.guard('FilePlugin', 'ReadFile', { path: '/tmp/notes.txt' }, () => 'notes')).toBe('notes');
    await guarded.flushAudit();
    const entries = await gateway.auditEntries(`agentId=${agentId}&source=check`, (found) => found.length >= 2);
    expect(entries.filter((entry) => entry.details?.cached === true)).toEqual([expect.objectContaining({ kind: 'decision', decision: 'allow' })]);
    expect(entries.filter(isOutcome)).toEqual([expect.objectContaining({ decision: 'allow', reason: 'returned string of 5 characters' })]);
  });
});

describe('batches', () => {
  it('sends queued events in batch bodies, auditBatchSize at a time', async () => {
    const agentId = await gateway.createAgent('batched');
    const proxy = await CountingProxy.listen(gateway.url);
    try {
      const batched = await client({ agentId, gatewayUrl: proxy.url, auditBatchSize: 50, auditFlushMs: 3_600_000 });
      for (let index = 0; index < 120; index++) await batched.audit({ plugin: 'BatchPlugin', function: 'Run', decision: 'allow', durationMs: 1, resultSummary: `event ${index}` });
      await batched.flushAudit();
      const entries = await gateway.auditEntries(`agentId=${agentId}&source=check`, (found) => found.filter(isOutcome).length >= 120);
      expect(new Set(entries.filter(isOutcome).map((entry) => entry.reason)).size).toBe(120);
      expect(batched.pendingAudit).toBe(0);
      // 50 + 50 + 20: one request per batch, where each event took one of its own.
      expect(proxy.auditRequests).toBe(3);
    } finally {
      await proxy.close();
    }
  });

  it('stamps an event delivered late with the time the call happened', async () => {
    const agentId = await gateway.createAgent('late-delivery');
    const proxy = await CountingProxy.listen(gateway.url);
    try {
      proxy.held = true;
      const late = await client({ agentId, gatewayUrl: proxy.url, grpcAddress: '127.0.0.1:1' });
      const before = Date.now();
      await late.audit({ plugin: 'LatePlugin', function: 'Run', decision: 'allow', durationMs: 1 });
      const after = Date.now();
      await sleep(1500);
      expect(late.pendingAudit).toBe(1);
      proxy.held = false;
      await late.flushAudit();
      const [entry] = (await gateway.auditEntries(`agentId=${agentId}&source=check`, (found) => found.some(isOutcome))).filter(isOutcome);
      const stamped = Date.parse(entry.timestamp);
      expect(stamped).toBeGreaterThanOrEqual(before - 1);
      expect(stamped).toBeLessThanOrEqual(after + 1);
    } finally {
      await proxy.close();
    }
  });
});

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

function runApp(env: Record<string, string>, untilWritten = false): Promise<Ran> {
  const child = spawn(process.execPath, [APP], {
    env: { PATH: process.env.PATH ?? '', GATEWAY_URL: gateway.url, GRPC_ADDRESS: `127.0.0.1:${gateway.grpcPort}`, API_KEY: gateway.apiKey, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const ran: Ran = { code: null, stdout: '', stderr: '' };
  child.stdout!.on('data', (chunk: Buffer) => {
    ran.stdout += chunk.toString();
    if (untilWritten && ran.stdout.includes('written')) child.kill('SIGKILL');
  });
  child.stderr!.on('data', (chunk: Buffer) => (ran.stderr += chunk.toString()));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ ...ran, code })));
}

describe('the default write-ahead file', () => {
  it('two processes of one application run at once, each with its own file, and both deliver', async () => {
    const agentId = await gateway.createAgent('two-processes');
    const directory = fs.mkdtempSync(path.join(scratch, 'app-'));
    const env = { AGENT_ID: agentId, AUDIT_DIR: directory, APP_EVENTS: '30' };
    const [first, second] = await Promise.all([runApp({ ...env, APP_NAME: 'first' }), runApp({ ...env, APP_NAME: 'second' })]);
    expect(first).toEqual({ code: 0, stdout: 'done 0\n', stderr: '' });
    expect(second).toEqual({ code: 0, stdout: 'done 0\n', stderr: '' });
    const outcomes = (await gateway.auditEntries(`agentId=${agentId}&source=check`, (found) => found.filter(isOutcome).length >= 60)).filter(isOutcome);
    expect(outcomes).toHaveLength(60);
    // Closed with nothing left to send, each process removed its file.
    expect(fs.readdirSync(directory)).toEqual([]);
  });

  it('several clients of one agent in one process each get a file of their own', async () => {
    const agentId = await gateway.createAgent('two-clients');
    const auditDirectory = fs.mkdtempSync(path.join(scratch, 'keyed-'));
    const [one, two] = [await client({ agentId, auditDirectory }), await client({ agentId, auditDirectory })];
    await one.audit({ plugin: 'KeyedPlugin', function: 'One', decision: 'allow', durationMs: 1 });
    await two.audit({ plugin: 'KeyedPlugin', function: 'Two', decision: 'allow', durationMs: 1 });
    await Promise.all([one.flushAudit(), two.flushAudit()]);
    const outcomes = (await gateway.auditEntries(`agentId=${agentId}&source=check`, (found) => found.filter(isOutcome).length >= 2)).filter(isOutcome);
    expect(outcomes.map((entry) => entry.action).sort()).toEqual(['KeyedPlugin.One', 'KeyedPlugin.Two']);
  });

  it('the next process to start sends what a killed one left, each event once', async () => {
    const agentId = await gateway.createAgent('recovered');
    const directory = fs.mkdtempSync(path.join(scratch, 'killed-'));
    const killed = await runApp({ AGENT_ID: agentId, AUDIT_DIR: directory, APP_EVENTS: '25', APP_NAME: 'killed', APP_HANG: '1' }, true);
    expect(killed).toMatchObject({ code: null, stdout: 'written\n' });
    expect(fs.readdirSync(directory).filter((name) => name.endsWith('.wal'))).toHaveLength(1);
    // Two processes start at once: one of them takes the file over, and nothing is sent twice.
    const [first, second] = await Promise.all([
      runApp({ AGENT_ID: agentId, AUDIT_DIR: directory, APP_EVENTS: '1', APP_NAME: 'next-a' }),
      runApp({ AGENT_ID: agentId, AUDIT_DIR: directory, APP_EVENTS: '1', APP_NAME: 'next-b' }),
    ]);
    expect([first.code, second.code]).toEqual([0, 0]);
    const outcomes = (await gateway.auditEntries(`agentId=${agentId}&source=check`, (found) => found.filter(isOutcome).length >= 27)).filter(isOutcome);
    await sleep(300);
    expect((await gateway.auditEntries(`agentId=${agentId}&source=check`, () => true)).filter(isOutcome)).toHaveLength(27);
    expect(outcomes.filter((entry) => (entry.reason ?? '').startsWith('killed '))).toHaveLength(25);
    expect(fs.readdirSync(directory)).toEqual([]);
  });
});

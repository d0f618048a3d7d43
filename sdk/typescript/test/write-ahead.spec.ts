import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { GovernanceClient } from '../src';
import { AuditEntry, SdkGateway, tempWal } from './support/sdk-gateway';

/**
 * The audit write-ahead file across a crash: a child process records events through the built
 * SDK and is killed with SIGKILL; a restarted client sends what was written but not
 * acknowledged, and the gateway holds every event exactly once.
 */

const WRITER = path.join(__dirname, 'support', 'audit-writer.js');
let gateway: SdkGateway;

beforeAll(async () => {
  if (!fs.existsSync(path.resolve(__dirname, '..', 'dist', 'index.js'))) throw new Error('sdk/typescript/dist is missing: run `npm run build` at the repository root');
  gateway = await SdkGateway.start();
}, 120_000);
afterAll(() => gateway?.stop());

/** Runs the writer until it has `count` events on disk, then kills it with SIGKILL. */
async function writeAndKill(agentId: string, wal: string, count: number, flushMs: number, batch: number): Promise<void> {
  const child = spawn(process.execPath, [WRITER], {
    env: { PATH: process.env.PATH ?? '', GATEWAY_URL: gateway.url, API_KEY: gateway.apiKey, AGENT_ID: agentId, WAL: wal, AUDIT_COUNT: String(count), AUDIT_FLUSH_MS: String(flushMs), AUDIT_BATCH: String(batch) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('written') && resolve());
    child.once('exit', (code) => reject(new Error(`writer exited early (${code}): ${stderr}`)));
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

/** Restarts a client on `wal` (which resends what it holds) and lets it deliver everything. */
async function restart(agentId: string, wal: string): Promise<void> {
  const client = await GovernanceClient.create({ gatewayUrl: gateway.url, grpcAddress: '127.0.0.1:1', apiKey: gateway.apiKey, agentId, auditLogPath: wal, auditFlushMs: 50 });
  try {
    for (let waited = 0; client.pendingAudit > 0 && waited < 10_000; waited += 50) {
      await client.flushAudit();
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(client.pendingAudit).toBe(0);
  } finally {
    await client.close();
  }
}

/** The agent's outcome entries once `count` have arrived, and a moment later (when a duplicate would show). */
async function outcomes(agentId: string, count: number): Promise<AuditEntry[]> {
  const query = `agentId=${agentId}&source=check`;
  await gateway.auditEntries(query, (found) => found.length >= count);
  await new Promise((resolve) => setTimeout(resolve, 300));
  return (await gateway.auditEntries(query, () => true)).filter((entry) => entry.kind === 'outcome');
}

function eventIds(entries: AuditEntry[]): string[] {
  return entries.map((entry) => String(entry.details?.eventId));
}

it('events written but never sent reach the gateway after a restart, each once, also when resent twice', async () => {
  const agentId = await gateway.createAgent('wal-unsent');
  const wal = tempWal();
  await writeAndKill(agentId, wal, 20, 3_600_000, 500);
  expect(fs.readFileSync(wal, 'utf8').trim().split('\n')).toHaveLength(20);
  const copy = `${wal}.copy`;
  fs.copyFileSync(wal, copy);
  expect((await gateway.admin<{ entries: unknown[] }>('GET', `/admin/audit?agentId=${agentId}&source=check`)).body.entries).toHaveLength(0);

  await restart(agentId, wal);
  expect(fs.statSync(wal).size).toBe(0);
  // The copy is a crash after sending but before the acknowledgement reached the file.
  await restart(agentId, copy);

  const found = await outcomes(agentId, 20);
  expect(found).toHaveLength(20);
  expect(new Set(eventIds(found)).size).toBe(20);
  expect(found.map((entry) => entry.reason).sort()).toEqual(Array.from({ length: 20 }, (_, index) => `event ${index}`).sort());
});

it('a kill while batches are being sent loses none and doubles none', async () => {
  const agentId = await gateway.createAgent('wal-sending');
  const wal = tempWal();
  await writeAndKill(agentId, wal, 60, 5, 5);
  await restart(agentId, wal);
  const found = await outcomes(agentId, 60);
  expect(found).toHaveLength(60);
  expect(new Set(eventIds(found)).size).toBe(60);
});

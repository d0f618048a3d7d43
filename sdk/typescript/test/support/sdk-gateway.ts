import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { freePort, GatewayProcess, killGateway, launchGateway } from '../../../../test/support/gateway-process';
import { call, TestResponse } from '../../../../test/support/http-client';
import { dropDatabase } from '../../../../test/support/own-database';

export const FIXTURES = path.resolve(__dirname, '..', '..', '..', 'fixtures');
const ADMIN_TOKEN = 'sdk-test-admin-token-0123456789abcdef';

interface SharedCall {
  name: string;
  agent: string;
  plugin: string;
  function: string;
  args: Record<string, unknown>;
  context: Record<string, unknown>;
}

/** sdk/fixtures/decision-cases.json (its `about` says what each part means). */
export interface DecisionCases {
  policies: string;
  agents: Array<{ name: string; trustTier: string; tags: string[] }>;
  cases: Array<SharedCall & { expect: { decision: 'allow' | 'deny'; policy: string } }>;
  cachedDenials: Array<
    SharedCall & {
      calls: number;
      expect: { decision: 'allow' | 'deny'; policy: string; fromGateway: number; fromCache: number; trail: { decisionEntries: number; cachedEntries: number; cachedNameTheGatewayDecision: boolean } };
    }
  >;
  timeouts: Array<
    SharedCall & {
      failureMode: 'fail-closed' | 'fail-open';
      throwOnDenied: boolean;
      timeoutSeconds: number;
      expect: { runs: boolean; decision: 'allow' | 'deny'; source: 'timeout'; throws: boolean; auditedDecision: 'allow' | 'deny' };
    }
  >;
  unreachable: Array<
    SharedCall & {
      address: 'closed-port' | 'unresolvable';
      failureMode: 'fail-closed' | 'fail-open';
      throwOnDenied: boolean;
      timeoutSeconds: number;
      expect: { runs: boolean; throws: boolean; auditEvents: number };
    }
  >;
}

export const DECISION_CASES = JSON.parse(fs.readFileSync(path.join(FIXTURES, 'decision-cases.json'), 'utf8')) as DecisionCases;

export interface AuditEntry {
  id: string;
  timestamp: string;
  source: string;
  kind: string;
  action: string;
  decision: string;
  reason: string | null;
  agentId: string | null;
  details: Record<string, unknown> | null;
}

/**
 * A real gateway process (`node dist/src/main.js`, built by `npm run build`) with the shared
 * fixture policies, a database of its own (embedded PGlite in a temp DATA_DIR, or a throwaway
 * database on DATABASE_URL's server when the run sets one), an API key and the fixture agents.
 */
export class SdkGateway {
  private constructor(
    readonly process: GatewayProcess,
    readonly grpcPort: number,
    readonly apiKey: string,
    /** Agent ids by the fixture's agent names. */
    readonly agents: Record<string, string>,
    private readonly cleanup: () => Promise<void>,
  ) {}

  /** The gateway's HTTP address. */
  get url(): string {
    return this.process.url;
  }

  /** Starts the gateway (with `env` over the defaults) and creates the fixture agents and an API key. */
  static async start(env: Record<string, string> = {}): Promise<SdkGateway> {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-sdk-gw-'));
    const database = await ownDatabase(dataDir);
    const grpcPort = await freePort();
    const gateway = await launchGateway({
      ...database.env,
      PDP_GRPC_PORT: String(grpcPort),
      ADMIN_TOKEN,
      POLICIES_FILE: path.join(FIXTURES, 'policies.yaml'),
      AUDIT_FLUSH_MS: '10',
      LOG_LEVEL: 'error',
      ...env,
    });
    const cleanup = async () => {
      await killGateway(gateway);
      await database.dispose();
      fs.rmSync(dataDir, { recursive: true, force: true });
    };
    try {
      await healthy(gateway);
      const admin = (pathname: string, body: object) => call<{ id: string; key: string }>(gateway.url, 'POST', pathname, { adminToken: ADMIN_TOKEN, body });
      const agents: Record<string, string> = {};
      for (const agent of DECISION_CASES.agents) agents[agent.name] = (await admin('/admin/agents', agent)).body.id;
      const key = await admin('/admin/api-keys', { name: 'sdk tests' });
      return new SdkGateway(gateway, grpcPort, key.body.key, agents, cleanup);
    } catch (error) {
      await cleanup();
      throw error;
    }
  }

  /** An admin API call with the organization's admin token. */
  admin<T = Record<string, unknown>>(method: string, pathname: string, body?: unknown, headers?: Record<string, string>): Promise<TestResponse<T>> {
    return call<T>(this.url, method, pathname, { adminToken: ADMIN_TOKEN, body, headers });
  }

  /** A new agent of the organization. */
  async createAgent(name: string, trustTier = 'verified', tags: string[] = []): Promise<string> {
    const response = await this.admin<{ id: string }>('POST', '/admin/agents', { name, trustTier, tags });
    if (response.status !== 201) throw new Error(`agent not created: ${response.text}`);
    return response.body.id;
  }

  /** The audit entries matching `query` once `ready` holds for them (the gateway writes in batches). */
  async auditEntries(query: string, ready: (entries: AuditEntry[]) => boolean, timeoutMs = 10_000): Promise<AuditEntry[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const response = await this.admin<{ entries: AuditEntry[] }>('GET', `/admin/audit?limit=1000&${query}`);
      if (ready(response.body.entries)) return response.body.entries;
      if (Date.now() > deadline) throw new Error(`audit entries for ${query} not as expected after ${timeoutMs} ms: ${JSON.stringify(response.body.entries)}`);
      await sleep(50);
    }
  }

  /** Kills the gateway and removes its database and data directory. */
  async stop(): Promise<void> {
    await this.cleanup();
  }
}

async function ownDatabase(dataDir: string): Promise<{ env: Record<string, string>; dispose: () => Promise<void> }> {
  const serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) return { env: { DATA_DIR: dataDir }, dispose: async () => undefined };
  const name = `agentgov_sdk_${randomBytes(6).toString('hex')}`;
  const admin = new Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    env: { DATA_DIR: dataDir, DATABASE_URL: url.toString() },
    dispose: async () => {
      await dropDatabase(admin, name);
      await admin.end();
    },
  };
}

/** Waits for GET /health to answer 200 (LOG_LEVEL=error prints no start line to wait for). */
async function healthy(gateway: GatewayProcess, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (gateway.child.exitCode !== null) throw new Error(`gateway exited with ${gateway.child.exitCode}: ${gateway.output().stderr}`);
    const status = await fetch(`${gateway.url}/health`).then((response) => response.status, () => 0);
    if (status === 200) return;
    if (Date.now() > deadline) throw new Error(`gateway not healthy after ${timeoutMs} ms: ${gateway.output().stderr}`);
    await sleep(100);
  }
}

/** Resolves after `ms`. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A TCP server that accepts connections and never answers: a stalled gateway. */
export async function stalledServer(): Promise<{ port: number; close: () => Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    port,
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** A TCP forwarder on `port` to `target`: the gateway "coming back" at an address that was dead. */
export async function forwarder(port: number, target: number): Promise<{ close: () => Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((inbound) => {
    const outbound = net.connect(target, '127.0.0.1');
    for (const socket of [inbound, outbound]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => undefined);
    }
    inbound.pipe(outbound).pipe(inbound);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

export { freePort };

/** A host name that never resolves (RFC 2606 reserves .invalid). */
export const UNRESOLVABLE_HOST = 'agentgov-unreachable.invalid';
/** A write-ahead file path in a new temp directory. */
export function tempWal(): string {
  return path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-sdk-wal-')), 'audit.wal');
}

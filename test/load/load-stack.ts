import { createPublicKey, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Pool } from 'undici';
import type { LoadConfig } from './load-config';
import { targetPool } from './load-generator';
import { freePort, PrivatePostgres, PrivateRedis } from './private-services';
import { RecordingUpstream } from './recording-upstream';
import { LoadAgent, POLICIES, TargetName } from './requests';
import { getJson, numberIn, ServiceProcess } from './service-process';

/** The repository's root: the nearest folder above this file holding package.json (from test/load or dist/test/load). */
export function repositoryRoot(): string {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`no package.json above ${__dirname}`);
  }
}

/** One audit entry of a decision, as the suite matches it. */
export interface AuditedDecision {
  traceId: string;
  decision: string;
  source: string;
  status: number | null;
}

/**
 * Everything a run needs, on loopback: its own PostgreSQL and Redis, the recording upstream,
 * two gateway instances on them, and a sidecar in front of the first gateway; an agent to act
 * as, and one connection pool per target for the load.
 */
export class LoadStack {
  readonly pools: Record<TargetName, Pool>;
  /** Starts every trace id of this run, so a case's requests are found by prefix. */
  readonly runTag = `lt${randomBytes(3).toString('hex')}`;

  private constructor(
    readonly config: LoadConfig,
    readonly logDir: string,
    private readonly scratch: string,
    readonly postgres: PrivatePostgres,
    readonly redis: PrivateRedis,
    readonly upstream: RecordingUpstream,
    readonly gateways: [ServiceProcess, ServiceProcess],
    readonly sidecar: ServiceProcess,
    readonly adminToken: string,
    readonly agent: LoadAgent,
  ) {
    const pool = (service: ServiceProcess) => targetPool(service.url, config.concurrency, config.requestTimeoutMs);
    this.pools = { 'gateway-1': pool(gateways[0]), 'gateway-2': pool(gateways[1]), sidecar: pool(sidecar) };
  }

  /** Starts it all; on a failure, stops what was started and rethrows. */
  static async start(config: LoadConfig, logDir: string, say: (line: string) => void): Promise<LoadStack> {
    const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-load-'));
    const cleanup: Array<() => Promise<void> | void> = [() => fs.rmSync(scratch, { recursive: true, force: true })];
    try {
      say('starting a private PostgreSQL (initdb, pg_ctl) and Redis');
      const postgres = await PrivatePostgres.start();
      cleanup.unshift(() => postgres.destroy(path.join(logDir, 'postgres.log')));
      const redis = await PrivateRedis.start(logDir);
      cleanup.unshift(() => redis.destroy());
      const upstream = await RecordingUpstream.start(config.upstreamDelayMs);
      cleanup.unshift(() => upstream.close());

      const adminToken = randomBytes(24).toString('hex');
      const policiesFile = path.join(scratch, 'policies.yaml');
      fs.writeFileSync(policiesFile, POLICIES);
      const signingKeyFile = path.join(scratch, 'signing-key.pem');
      const gatewayEnv = (name: string): Record<string, string> => ({
        DATABASE_URL: postgres.url,
        REDIS_URL: redis.url,
        ADMIN_TOKEN: adminToken,
        PUBLIC_URL: 'http://gateway.load.test',
        SIGNING_KEY_FILE: signingKeyFile,
        POLICIES_FILE: policiesFile,
        UPSTREAM_URL: upstream.url,
        DATA_DIR: path.join(scratch, name),
        PDP_GRPC_PORT: '0',
        AUDIT_FLUSH_MS: String(config.auditFlushMs),
        LOG_LEVEL: 'warn',
      });
      const root = repositoryRoot();
      const gatewayMain = path.join(root, 'dist/src/main.js');
      const gateways: [ServiceProcess, ServiceProcess] = [
        new ServiceProcess('gateway-1', gatewayMain, ['--max-semi-space-size=32'], await freePort(), gatewayEnv('gateway-1'), path.join(logDir, 'gateway-1.log')),
        new ServiceProcess('gateway-2', gatewayMain, ['--max-semi-space-size=32'], await freePort(), gatewayEnv('gateway-2'), path.join(logDir, 'gateway-2.log')),
      ];
      // One at a time: the first creates the schema and the signing key the second shares.
      for (const gateway of gateways) {
        say(`starting ${gateway.name} (${gateway.url})`);
        cleanup.unshift(() => gateway.kill());
        gateway.launch();
        await gateway.ready(config.startTimeoutS * 1000);
      }
      const agent = await createAgent(gateways[0].url, adminToken);
      const sidecarToken = await createSidecarToken(gateways[0].url, adminToken);
      const publicKey = createPublicKey(fs.readFileSync(signingKeyFile)).export({ type: 'spki', format: 'pem' }).toString();
      const sidecar = new ServiceProcess(
        'sidecar',
        path.join(root, 'dist/src/sidecar/main.js'),
        [],
        await freePort(),
        {
          GATEWAY_URL: gateways[0].url,
          ADMIN_TOKEN: sidecarToken,
          BUNDLE_PUBLIC_KEY: publicKey,
          CACHE_DIR: path.join(scratch, 'sidecar-cache'),
          SIDECAR_ID: 'load-edge',
          UPSTREAM_URL: upstream.url,
          LOG_LEVEL: 'warn',
        },
        path.join(logDir, 'sidecar.log'),
      );
      say(`starting the sidecar (${sidecar.url}, GATEWAY_URL ${gateways[0].url})`);
      cleanup.unshift(() => sidecar.kill());
      sidecar.launch();
      await sidecar.ready(config.startTimeoutS * 1000, sidecarReady);
      return new LoadStack(config, logDir, scratch, postgres, redis, upstream, gateways, sidecar, adminToken, agent);
    } catch (error) {
      for (const step of cleanup) await step();
      throw error;
    }
  }

  /** The process behind a target. */
  service(target: TargetName): ServiceProcess {
    return target === 'sidecar' ? this.sidecar : this.gateways[target === 'gateway-1' ? 0 : 1];
  }

  /** Every decision entry whose trace id starts with `prefix`, read from the private PostgreSQL. */
  async auditedDecisions(prefix: string): Promise<AuditedDecision[]> {
    const client = await this.postgres.connect();
    try {
      const result = await client.query<{ trace_id: string; decision: string; source: string; status: number | null }>(
        `SELECT trace_id, decision, source, status FROM audit_entries WHERE kind = 'decision' AND left(trace_id, $2) = $1`,
        [prefix, prefix.length],
      );
      return result.rows.map((row) => ({ traceId: row.trace_id, decision: row.decision, source: row.source, status: row.status }));
    } finally {
      await client.end();
    }
  }

  /** How many entries the first gateway still holds unwritten, and the sidecar unacknowledged; null for a process that does not answer. */
  async pendingAudit(): Promise<Record<string, number | null>> {
    const pending: Record<string, number | null> = {};
    for (const gateway of this.gateways) {
      const health = gateway.running ? await getJson(`${gateway.url}/health`) : null;
      pending[gateway.name] = numberIn(health?.body, 'audit', 'pending');
    }
    const sidecar = this.sidecar.running ? await getJson(`${this.sidecar.url}/health`) : null;
    pending.sidecar = numberIn(sidecar?.body, 'audit', 'pendingEntries');
    return pending;
  }

  /** GET /admin/sidecars on the first gateway: is every edge decision at the gateway (docs/sidecar.md)? */
  async sidecarFleet(): Promise<{ gaps: unknown[]; renumbered: number; unforwarded: number; received: number } | null> {
    const answer = await getJson(`${this.gateways[0].url}/admin/sidecars`, 5000, { 'x-admin-token': this.adminToken });
    const sidecars = (answer?.body.sidecars ?? []) as Array<{ id: string; gaps: unknown[]; renumbered: number; unforwarded: number; received: number }>;
    const edge = sidecars.find((view) => view.id === 'load-edge');
    return edge ? { gaps: edge.gaps, renumbered: edge.renumbered, unforwarded: edge.unforwarded, received: edge.received } : null;
  }

  /** GET /admin/audit/verify: the hash chain of the organization's trail, recomputed. */
  async verifyChain(timeoutMs: number): Promise<Record<string, unknown> | null> {
    const answer = await getJson(`${this.gateways[0].url}/admin/audit/verify`, timeoutMs, { 'x-admin-token': this.adminToken });
    return answer?.body ?? null;
  }

  async destroy(): Promise<void> {
    await Promise.all(Object.values(this.pools).map((pool) => pool.destroy()));
    await this.sidecar.kill();
    for (const gateway of this.gateways) await gateway.kill();
    await this.upstream.close();
    this.redis.destroy();
    await this.postgres.destroy(path.join(this.logDir, 'postgres.log'));
    fs.rmSync(this.scratch, { recursive: true, force: true });
  }
}

/** Ready once a bundle is in force that holds the load's agent. */
export function sidecarReady(status: number, body: Record<string, unknown>): boolean {
  return status === 200 && typeof body.cachedAgents === 'number' && body.cachedAgents >= 1;
}

async function adminPost(url: string, adminToken: string, body: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(url, { method: 'POST', headers: { 'x-admin-token': adminToken, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const answer = (await response.json()) as Record<string, unknown>;
  if (response.status !== 201) throw new Error(`POST ${url}: ${response.status} ${JSON.stringify(answer)}`);
  return answer;
}

async function createAgent(gatewayUrl: string, adminToken: string): Promise<LoadAgent> {
  const agent = await adminPost(`${gatewayUrl}/admin/agents`, adminToken, { name: 'load-agent', trustTier: 'verified' });
  return { id: agent.id as string, token: agent.token as string };
}

async function createSidecarToken(gatewayUrl: string, adminToken: string): Promise<string> {
  const created = await adminPost(`${gatewayUrl}/admin/sidecar-tokens`, adminToken, { name: 'load-edge' });
  return created.token as string;
}

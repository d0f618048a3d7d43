import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { Test } from '@nestjs/testing';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import pino from 'pino';
import type { AuditRecord } from '../src/core/audit-record/audit-record';
import { DecisionCoreModule } from '../src/core/decision/decision-core.module';
import { DecisionEvent, DecisionEvents } from '../src/core/decision/decision-events';
import {
  AGENT_SOURCE,
  agentSnapshot,
  AgentSnapshot,
  DECISION_LOG,
  DECISION_SETTINGS,
  DecisionLog,
  LoadedPolicies,
  POLICY_SOURCE,
  RATE_LIMITER,
  USAGE_GATE,
  VERIFICATION_KEYS,
} from '../src/core/decision/decision-sources';
import { DecisionRequest, DecisionService } from '../src/core/decision/decision.service';
import { AgentAuthenticator } from '../src/core/decision/agent-authenticator';
import { JwkSet } from '../src/sidecar/jwk-set';
import { LoggingModule } from '../src/core/logging/logging.module';
import { compilePolicies } from '../src/core/policy-engine/compile-policies';
import { SlidingWindowLimiter } from '../src/core/policy-engine/sliding-window-limiter';

const ISSUER = 'https://gateway.example';
const ORG = 'org_edge';

/** An audit log in memory, as a host without a database would keep one. */
class MemoryLog implements DecisionLog {
  readonly entries: AuditRecord[] = [];
  record(entry: AuditRecord): void {
    this.entries.push(entry);
  }
  whenWritable(): undefined {
    return undefined;
  }
}

/**
 * The decision core on in-memory sources: the proof that the governed decision and agent-token
 * verification need no TypeORM, database or Redis, which is what lets the edge sidecar run them
 * on a signed bundle.
 */
describe('decision core without a database', () => {
  const agents = new Map<string, AgentSnapshot>();
  const log = new MemoryLog();
  let signToken: (claims: Record<string, unknown>, subject: string, expSeconds?: number) => Promise<string>;
  let authenticator: AgentAuthenticator;
  let decisions: DecisionService;
  const events: DecisionEvent[] = [];

  beforeAll(async () => {
    const { privateKey, publicKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
    const jwk = { ...(await exportJWK(publicKey)), kid: 'edge-key-1', alg: 'EdDSA' };
    signToken = (claims, subject, expSeconds = 3600) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: 'EdDSA', kid: 'edge-key-1' })
        .setSubject(subject)
        .setIssuer(ISSUER)
        .setIssuedAt()
        .setExpirationTime(Math.floor(Date.now() / 1000) + expSeconds)
        .sign(privateKey);
    const policies: LoadedPolicies = {
      version: 7,
      set: compilePolicies(
        [
          {
            name: 'block-sensitive-files',
            match: { action: 'read:*' },
            rules: [{ condition: 'args.path starts_with "/etc"', action: 'deny', reason: 'System files' }],
          },
          { name: 'writes-need-trust', match: { action: 'write:*' }, rules: [{ condition: 'agent.trust_tier < trusted', action: 'deny', reason: 'Needs a trusted agent' }] },
        ],
        { namespace: ORG },
      ),
    };
    agents.set('agent_reader', agentSnapshot({ id: 'agent_reader', orgId: ORG, name: 'reader', trustTier: 'verified', tags: ['a'], revoked: false }));
    agents.set('agent_gone', agentSnapshot({ id: 'agent_gone', orgId: ORG, name: 'gone', trustTier: 'trusted', tags: [], revoked: true }));

    const moduleRef = await Test.createTestingModule({
      imports: [
        LoggingModule.forRoot(pino({ level: 'silent' })),
        DecisionCoreModule.register({
          sources: [
            { provide: POLICY_SOURCE, useValue: { get: () => policies } },
            { provide: AGENT_SOURCE, useValue: { get: (id: string) => agents.get(id) ?? null } },
            { provide: VERIFICATION_KEYS, useValue: await JwkSet.of([jwk]) },
            { provide: USAGE_GATE, useValue: { tryConsume: () => true } },
            { provide: DECISION_LOG, useValue: log },
            { provide: RATE_LIMITER, useValue: new SlidingWindowLimiter() },
            { provide: DECISION_SETTINGS, useValue: { mode: 'enforce', tokenIssuer: ISSUER } },
          ],
        }),
      ],
    }).compile();
    authenticator = moduleRef.get(AgentAuthenticator);
    decisions = moduleRef.get(DecisionService);
    moduleRef.get(DecisionEvents).subscribe((event) => events.push(event));
  });

  function request(action: string, args: Record<string, unknown>): DecisionRequest {
    return { source: 'sidecar', traceId: 'trace-1', action, resource: action.slice(action.indexOf(':') + 1), plugin: 'http', function: action.slice(0, action.indexOf(':')), args, context: {} };
  }

  it('verifies a real token against the key set and decides, records and emits for it', async () => {
    const token = await signToken({ name: 'reader', tier: 'verified', tags: ['a'], org: ORG }, 'agent_reader');
    const principal = await authenticator.authenticate(`Bearer ${token}`);
    expect(principal.agent.id).toBe('agent_reader');

    const denied = await decisions.check(principal, request('read:etc/passwd', { path: '/etc/passwd' }));
    expect(denied.decision).toMatchObject({ effect: 'deny', policy: 'block-sensitive-files', reason: 'System files' });
    expect(denied.policyVersion).toBe(7);
    const allowed = await decisions.check(principal, request('read:docs/a', { path: '/docs/a' }));
    expect(allowed.decision.effect).toBe('allow');
    const write = await decisions.check(principal, request('write:docs/a', { path: '/docs/a' }));
    expect(write.decision).toMatchObject({ effect: 'deny', policy: 'writes-need-trust' });

    expect(log.entries.map((entry) => [entry.id, entry.source, entry.action, entry.decision, entry.status])).toEqual([
      [denied.id, 'sidecar', 'read:etc/passwd', 'deny', 403],
      [allowed.id, 'sidecar', 'read:docs/a', 'allow', 200],
      [write.id, 'sidecar', 'write:docs/a', 'deny', 403],
    ]);
    expect(events.map((event) => event.entry.id)).toEqual([denied.id, allowed.id, write.id]);
  });

  it('refuses a token of another key, an expired token and a revoked agent', async () => {
    const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
    const forged = await new SignJWT({ org: ORG }).setProtectedHeader({ alg: 'EdDSA', kid: 'edge-key-1' }).setSubject('agent_reader').setIssuer(ISSUER).setIssuedAt().setExpirationTime('1h').sign(privateKey);
    await expect(authenticator.authenticate(`Bearer ${forged}`)).rejects.toMatchObject({ code: 'unauthorized' });
    const expired = await signToken({ org: ORG }, 'agent_reader', -10);
    await expect(authenticator.authenticate(`Bearer ${expired}`)).rejects.toMatchObject({ code: 'unauthorized', message: 'Token has expired' });
    const revoked = await signToken({ org: ORG }, 'agent_gone');
    await expect(authenticator.authenticate(`Bearer ${revoked}`)).rejects.toMatchObject({ code: 'unauthorized', message: 'Agent has been revoked' });
  });

  it('loads none of TypeORM, pg or ioredis', () => {
    // A fresh process, so nothing the test runner or other suites loaded counts.
    const root = path.join(__dirname, '..', 'dist', 'src');
    const script = `
      require(${JSON.stringify(path.join(root, 'core', 'decision', 'decision-core.module.js'))});
      require(${JSON.stringify(path.join(root, 'sidecar', 'jwk-set.js'))});
      require(${JSON.stringify(path.join(root, 'core', 'policy-engine', 'compile-policies.js'))});
      const loaded = Object.keys(require.cache).filter((file) => /node_modules[\\\\/](typeorm|pg|ioredis|@nestjs[\\\\/]typeorm)[\\\\/]/.test(file));
      process.stdout.write(JSON.stringify(loaded));`;
    expect(JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' }))).toEqual([]);
  });
});

/**
 * What the load sends: requests the policies allow, deny, or count in Redis, through the
 * gateways' and the sidecar's `/proxy/*` and the sidecar's `/enforce`, and malformed ones, each
 * under a trace id of its own (`X-Trace-ID`).
 */

export type TargetName = 'gateway-1' | 'gateway-2' | 'sidecar';
export const TARGETS: readonly TargetName[] = ['gateway-1', 'gateway-2', 'sidecar'];

/**
 * What the policies (POLICIES below) make of a request: `allow`, `deny` (must never reach the
 * upstream nor be answered as allowed), `limited` (allowed under a rate limit counted in Redis
 * on the gateways), `malformed` (refused before any decision; must never reach the upstream).
 */
export type PolicyKind = 'allow' | 'deny' | 'limited' | 'malformed';

export interface PlannedRequest {
  traceId: string;
  target: TargetName;
  route: 'proxy' | 'enforce';
  kind: PolicyKind;
  /** `normal`, or the name of the malformed variant. */
  variant: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
}

/** The agent every request acts as. */
export interface LoadAgent {
  id: string;
  token: string;
}

/**
 * The suite's policies (POLICIES_FILE of both gateways): anything naming `secret` is denied,
 * `limited` paths pass a rate limit so high it never trips but is counted in Redis by the
 * gateways (a Redis outage makes those decisions 503, audited as denials: docs/configuration.md
 * REDIS_URL); everything else is allowed.
 */
export const POLICIES = `policies:
  - name: load-secrets
    match: { action: "*:secret*" }
    rules:
      - name: secrets-refused
        condition: "true"
        action: deny
        reason: Secrets are refused to every agent
  - name: load-limited
    match: { action: "read:limited*" }
    rules:
      - name: shared-budget
        condition: rate_limit(per_org, 1000000, 1m)
        action: deny
        reason: Over the shared budget
`;

/** A trace id of this run, case, target and sequence number: 1-128 of `A-Za-z0-9._:-` (docs/proxy.md). */
export function traceIdOf(runTag: string, caseId: string, target: TargetName, seq: number, malformed = false): string {
  return `${runTag}.${caseId}.${TARGET_TAGS[target]}.${malformed ? 'm' : 'n'}${seq}`;
}

/** The trace id prefix of one case's requests. */
export function casePrefix(runTag: string, caseId: string): string {
  return `${runTag}.${caseId}.`;
}

const TARGET_TAGS: Record<TargetName, string> = { 'gateway-1': 'g1', 'gateway-2': 'g2', sidecar: 'sc' };

/** The `seq`-th request of the steady load to `target`: 60% allowed, 25% denied, 15% rate-limited; half the sidecar's to `/enforce`. */
export function normalRequest(target: TargetName, seq: number, traceId: string, agent: LoadAgent): PlannedRequest {
  const slot = seq % 20;
  const kind: PolicyKind = slot < 12 ? 'allow' : slot < 17 ? 'deny' : 'limited';
  const resource = `${KIND_PATHS[kind]}/${seq}`;
  const headers = { authorization: `Bearer ${agent.token}`, 'x-trace-id': traceId };
  if (target === 'sidecar' && seq % 2 === 0) {
    const body = JSON.stringify({ agentId: agent.id, action: `read:${resource}`, resource, context: {} });
    return { traceId, target, route: 'enforce', kind, variant: 'normal', method: 'POST', path: '/enforce', headers: { ...headers, 'content-type': 'application/json' }, body };
  }
  return { traceId, target, route: 'proxy', kind, variant: 'normal', method: 'GET', path: `/proxy/${resource}`, headers };
}

const KIND_PATHS: Record<Exclude<PolicyKind, 'malformed'>, string> = { allow: 'data', deny: 'secret', limited: 'limited' };

interface MalformedVariant {
  name: string;
  route: 'proxy' | 'enforce';
  /** `deny` for a request the policies must deny however it is spelled; else `malformed`. */
  kind: PolicyKind;
  build(seq: number, agent: LoadAgent): { path: string; headers: Record<string, string>; body?: string; method?: string };
}

/** Headers of a JSON POST with the agent's token. */
const asAgent = (agent: LoadAgent) => ({ authorization: `Bearer ${agent.token}`, 'content-type': 'application/json' });
const bearer = (agent: LoadAgent) => ({ authorization: `Bearer ${agent.token}` });
/** A JWT with `alg: none`: no signature at all. */
const UNSIGNED_TOKEN = `${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${Buffer.from('{"sub":"agent_x","org":"org_default"}').toString('base64url')}.`;

const PROXY_VARIANTS: MalformedVariant[] = [
  { name: 'proxy: no token', route: 'proxy', kind: 'malformed', build: (seq) => ({ path: `/proxy/data/${seq}`, headers: {} }) },
  { name: 'proxy: garbage token', route: 'proxy', kind: 'malformed', build: (seq) => ({ path: `/proxy/data/${seq}`, headers: { authorization: 'Bearer not.a.token' } }) },
  { name: 'proxy: unsigned token', route: 'proxy', kind: 'malformed', build: (seq) => ({ path: `/proxy/data/${seq}`, headers: { authorization: `Bearer ${UNSIGNED_TOKEN}` } }) },
  { name: 'proxy: climbs above /proxy/', route: 'proxy', kind: 'malformed', build: (_seq, agent) => ({ path: '/proxy/../admin/agents', headers: bearer(agent) }) },
  { name: 'proxy: encoded slash', route: 'proxy', kind: 'malformed', build: (seq, agent) => ({ path: `/proxy/data%2F${seq}`, headers: bearer(agent) }) },
  { name: 'proxy: header over 16 KiB', route: 'proxy', kind: 'malformed', build: (seq, agent) => ({ path: `/proxy/data/${seq}`, headers: { ...bearer(agent), 'x-padding': 'a'.repeat(20_000) } }) },
  { name: 'proxy: dot segments to secret', route: 'proxy', kind: 'deny', build: (seq, agent) => ({ path: `/proxy/data/../secret/${seq}`, headers: bearer(agent) }) },
  { name: 'proxy: encoded dots to secret', route: 'proxy', kind: 'deny', build: (seq, agent) => ({ path: `/proxy/data/%2e%2E/secret/${seq}`, headers: bearer(agent) }) },
  { name: 'proxy: escaped letters of secret', route: 'proxy', kind: 'deny', build: (seq, agent) => ({ path: `/proxy/%73ecr%65t/${seq}`, headers: bearer(agent) }) },
  { name: 'proxy: SECRET in capitals', route: 'proxy', kind: 'deny', build: (seq, agent) => ({ path: `/proxy/SECRET/${seq}`, headers: bearer(agent) }) },
  { name: 'proxy: declared secret action', route: 'proxy', kind: 'deny', build: (seq, agent) => ({ path: `/proxy/data/${seq}`, headers: { ...bearer(agent), 'x-service-action': `read:secret/${seq}` } }) },
];

/** `{"a":{"a":…}}` nested `depth` levels. */
function nested(depth: number): string {
  return '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
}

const ENFORCE_VARIANTS: MalformedVariant[] = [
  { name: 'enforce: invalid JSON', route: 'enforce', kind: 'malformed', build: (_seq, agent) => ({ path: '/enforce', headers: asAgent(agent), body: '{"agentId":' }) },
  { name: 'enforce: array body', route: 'enforce', kind: 'malformed', build: (_seq, agent) => ({ path: '/enforce', headers: asAgent(agent), body: '[1,2,3]' }) },
  { name: 'enforce: no action', route: 'enforce', kind: 'malformed', build: (_seq, agent) => ({ path: '/enforce', headers: asAgent(agent), body: JSON.stringify({ agentId: agent.id }) }) },
  {
    name: 'enforce: another agent named',
    route: 'enforce',
    kind: 'malformed',
    build: (seq, agent) => ({ path: '/enforce', headers: asAgent(agent), body: JSON.stringify({ agentId: 'agent_someone_else', action: `read:data/${seq}`, resource: 'x' }) }),
  },
  {
    name: 'enforce: nested 200 deep',
    route: 'enforce',
    kind: 'malformed',
    build: (seq, agent) => ({ path: '/enforce', headers: asAgent(agent), body: `{"agentId":${JSON.stringify(agent.id)},"action":"read:data/${seq}","resource":"x","context":${nested(200)}}` }),
  },
  {
    name: 'enforce: NUL in action',
    route: 'enforce',
    kind: 'malformed',
    build: (seq, agent) => ({ path: '/enforce', headers: asAgent(agent), body: JSON.stringify({ agentId: agent.id, action: `read:data/${seq}\u0000`, resource: 'x' }) }),
  },
  {
    name: 'enforce: garbage token',
    route: 'enforce',
    kind: 'malformed',
    build: (seq, agent) => ({ path: '/enforce', headers: { authorization: 'Bearer not.a.token', 'content-type': 'application/json' }, body: JSON.stringify({ agentId: agent.id, action: `read:data/${seq}`, resource: 'x' }) }),
  },
  {
    name: 'enforce: body over 1 MiB',
    route: 'enforce',
    kind: 'malformed',
    build: (seq, agent) => ({ path: '/enforce', headers: asAgent(agent), body: JSON.stringify({ agentId: agent.id, action: `read:data/${seq}`, resource: 'x', context: { pad: 'a'.repeat(1_100_000) } }) }),
  },
  {
    name: 'enforce: SECRET in capitals',
    route: 'enforce',
    kind: 'deny',
    build: (seq, agent) => ({ path: '/enforce', headers: asAgent(agent), body: JSON.stringify({ agentId: agent.id, action: `READ:SECRET/${seq}`, resource: `SECRET/${seq}`, context: {} }) }),
  },
];

/** The `seq`-th malformed request to `target`: the proxy's variants in turn, the sidecar alternating with /enforce's. */
export function malformedRequest(target: TargetName, seq: number, traceId: string, agent: LoadAgent): PlannedRequest {
  const variants = target === 'sidecar' ? [...PROXY_VARIANTS, ...ENFORCE_VARIANTS] : PROXY_VARIANTS;
  const variant = variants[seq % variants.length];
  const built = variant.build(seq, agent);
  return {
    traceId,
    target,
    route: variant.route,
    kind: variant.kind,
    variant: variant.name,
    method: built.method ?? (built.body === undefined ? 'GET' : 'POST'),
    path: built.path,
    headers: { ...built.headers, 'x-trace-id': traceId },
    body: built.body,
  };
}

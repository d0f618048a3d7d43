/**
 * Analytics rollups: decision counts per organization and UTC hour, and per agent, policy and
 * action, and delegation pair in that hour, kept up to date by the audit batch store in the
 * transaction that writes the entries, so they never disagree with the trail. The batch is
 * aggregated in memory and each table gets one upsert (one row per key). Plain code with no
 * Nest: the audit worker thread runs it.
 */
import { canonicalTier, TIER_NAMES, TrustTier } from '../../core/policy-engine/tiers';
import { AUDIT_TEXT_INDEX, copyValue } from '../../core/audit-record/audit-entry';
import type { SqlClient } from './sql-client';

export const HOUR_MS = 3_600_000;

/** Trust tiers as analytics reports them (docs/policies.md "Trust tiers"), lowest first. */
export const ANALYTICS_TIERS = ['sandboxed', 'verified', 'trusted', 'privileged'] as const;
export type AnalyticsTier = (typeof ANALYTICS_TIERS)[number];
const ANALYTICS_TIER_OF: Record<TrustTier, AnalyticsTier> = { unverified: 'sandboxed', verified: 'verified', trusted: 'trusted', privileged: 'privileged' };

/** The analytics name of a recorded tier (any alias), or '' when it is none. */
export function analyticsTier(recorded: string | null): AnalyticsTier | '' {
  const tier = recorded === null ? undefined : canonicalTier(recorded);
  return tier === undefined ? '' : ANALYTICS_TIER_OF[tier];
}

/** Position of a field in an entry's content (its canonical text from `source` on). */
const CONTENT_INDEX = Object.fromEntries(Object.entries(AUDIT_TEXT_INDEX).map(([field, index]) => [field, index - AUDIT_TEXT_INDEX.source])) as Record<
  keyof typeof AUDIT_TEXT_INDEX,
  number
>;

/** The fields of a decision entry the rollups count. */
export interface RolledDecision {
  orgId: string;
  ts: number;
  agentId: string | null;
  agentName: string | null;
  trustTier: string | null;
  action: string;
  allowed: boolean;
  policyName: string | null;
  ruleMatched: boolean;
  /** Microseconds: the request's latency, else the decision's (PDP and check calls); null when neither was recorded. */
  latencyUs: number | null;
  delegationChain: string[] | null;
}

/** Start offsets of the content fields up to the delegation chain, reused by every call (one thread, no await). */
const FIELD_STARTS = new Int32Array(CONTENT_INDEX.delegationChain + 2);

/**
 * The fields of a queued entry the rollups need, read from its content (canonical text from
 * `source` on) by column position; null for an admin entry, which analytics do not count.
 * Only the fields used are cut out of the text (the payloads after them are not touched).
 */
export function rolledDecision(orgIdText: string, ts: number, content: string): RolledDecision | null {
  if (!content.startsWith('decision\t', content.indexOf('\t') + 1)) return null;
  let start = 0;
  for (let i = 0; i < FIELD_STARTS.length; i++) {
    FIELD_STARTS[i] = start;
    start = content.indexOf('\t', start) + 1;
  }
  const field = (index: number) => content.slice(FIELD_STARTS[index], FIELD_STARTS[index + 1] - 1);
  const latency = copyValue(field(CONTENT_INDEX.latencyMs)) ?? copyValue(field(CONTENT_INDEX.decisionLatencyMs));
  const chain = copyValue(field(CONTENT_INDEX.delegationChain));
  return {
    orgId: copyValue(orgIdText)!,
    ts,
    agentId: copyValue(field(CONTENT_INDEX.agentId)),
    agentName: copyValue(field(CONTENT_INDEX.agentName)),
    trustTier: copyValue(field(CONTENT_INDEX.trustTier)),
    action: copyValue(field(CONTENT_INDEX.action))!,
    allowed: field(CONTENT_INDEX.decision) === 'allow',
    policyName: copyValue(field(CONTENT_INDEX.policyName)),
    ruleMatched: field(CONTENT_INDEX.rule) !== '\\N',
    latencyUs: latency === null ? null : Math.round(Number(latency) * 1000),
    delegationChain: chain === null ? null : delegationIds(chain),
  };
}

function delegationIds(json: string): string[] | null {
  const chain: unknown = JSON.parse(json);
  return Array.isArray(chain) ? chain.map(String) : null;
}

interface Counts {
  requests: number;
  allowed: number;
  denied: number;
}

interface HourTotals extends Counts {
  orgId: string;
  hour: number;
  ruleMatched: number;
  latencyUs: number;
  latencyCount: number;
  delegated: number;
  delegatedDenied: number;
  depthSum: number;
}

interface AgentTotals extends Counts {
  orgId: string;
  hour: number;
  agentId: string;
  tier: string;
  agentName: string | null;
  latencyUs: number;
  latencyCount: number;
  lastTs: number;
}

interface PolicyTotals extends Counts {
  orgId: string;
  hour: number;
  policyName: string;
  action: string;
}

interface PairTotals {
  orgId: string;
  hour: number;
  fromAgent: string;
  toAgent: string;
  count: number;
}

/** An organization's hour in a batch: its totals and its per-key rows, in nested maps (no composite string keys). */
interface HourBucket extends HourTotals {
  /** By agent id, then by tier (index in ANALYTICS_TIERS; the last slot for no tier). */
  agents: Map<string, Array<AgentTotals | undefined>>;
  /** By policy, then action. */
  policies: Map<string, Map<string, PolicyTotals>>;
  /** By delegating agent, then delegate. */
  pairs: Map<string, Map<string, PairTotals>>;
}

/** One batch's rollups, aggregated in memory, then written with one upsert per table. */
export class BatchRollups {
  private readonly orgs = new Map<string, Map<number, HourBucket>>();

  add(entry: RolledDecision): void {
    const bucket = this.bucket(entry.orgId, entry.ts - (((entry.ts % HOUR_MS) + HOUR_MS) % HOUR_MS));
    const depth = entry.delegationChain === null || entry.delegationChain.length === 0 ? 1 : entry.delegationChain.length;
    count(bucket, entry.allowed);
    if (entry.ruleMatched) bucket.ruleMatched++;
    if (entry.latencyUs !== null) {
      bucket.latencyUs += entry.latencyUs;
      bucket.latencyCount++;
    }
    bucket.depthSum += depth;
    if (depth > 1) {
      bucket.delegated++;
      if (!entry.allowed) bucket.delegatedDenied++;
      addPairs(bucket, entry.delegationChain!);
    }
    if (entry.agentId !== null) addAgent(bucket, entry);
    if (entry.policyName !== null) {
      const actions = getOr(bucket.policies, entry.policyName, () => new Map<string, PolicyTotals>());
      let policy = actions.get(entry.action);
      if (policy === undefined) {
        policy = { ...zeroCounts(), orgId: bucket.orgId, hour: bucket.hour, policyName: entry.policyName, action: entry.action };
        actions.set(entry.action, policy);
      }
      count(policy, entry.allowed);
    }
  }

  private bucket(orgId: string, hour: number): HourBucket {
    const hours = getOr(this.orgs, orgId, () => new Map<number, HourBucket>());
    let bucket = hours.get(hour);
    if (bucket === undefined) {
      bucket = {
        ...zeroCounts(),
        orgId,
        hour,
        ruleMatched: 0,
        latencyUs: 0,
        latencyCount: 0,
        delegated: 0,
        delegatedDenied: 0,
        depthSum: 0,
        agents: new Map(),
        policies: new Map(),
        pairs: new Map(),
      };
      hours.set(hour, bucket);
    }
    return bucket;
  }

  private buckets(): HourBucket[] {
    return [...this.orgs.values()].flatMap((hours) => [...hours.values()]);
  }

  /** Adds the batch to the rollup tables (inside the caller's transaction). */
  async write(client: SqlClient): Promise<void> {
    const hours = this.buckets();
    if (hours.length === 0) return;
    await client.query(UPSERT_HOURLY_SQL, [
      hours.map((row) => row.orgId),
      hours.map((row) => iso(row.hour)),
      ...(['requests', 'allowed', 'denied', 'ruleMatched', 'latencyUs', 'latencyCount', 'delegated', 'delegatedDenied', 'depthSum'] as const).map((key) => hours.map((row) => row[key])),
    ]);
    const agents = hours.flatMap((bucket) => [...bucket.agents.values()].flatMap((tiers) => tiers.filter((totals) => totals !== undefined)));
    if (agents.length > 0) {
      await client.query(UPSERT_AGENTS_SQL, [
        agents.map((row) => row.orgId),
        agents.map((row) => iso(row.hour)),
        agents.map((row) => row.agentId),
        agents.map((row) => row.tier),
        agents.map((row) => row.agentName),
        ...(['requests', 'allowed', 'denied', 'latencyUs', 'latencyCount'] as const).map((key) => agents.map((row) => row[key])),
        agents.map((row) => iso(row.lastTs)),
      ]);
    }
    const policies = hours.flatMap((bucket) => [...bucket.policies.values()].flatMap((actions) => [...actions.values()]));
    if (policies.length > 0) {
      await client.query(UPSERT_POLICIES_SQL, [
        policies.map((row) => row.orgId),
        policies.map((row) => iso(row.hour)),
        policies.map((row) => row.policyName),
        policies.map((row) => row.action),
        ...(['requests', 'allowed', 'denied'] as const).map((key) => policies.map((row) => row[key])),
      ]);
    }
    const pairs = hours.flatMap((bucket) => [...bucket.pairs.values()].flatMap((delegates) => [...delegates.values()]));
    if (pairs.length > 0) {
      await client.query(UPSERT_PAIRS_SQL, [
        pairs.map((row) => row.orgId),
        pairs.map((row) => iso(row.hour)),
        pairs.map((row) => row.fromAgent),
        pairs.map((row) => row.toAgent),
        pairs.map((row) => row.count),
      ]);
    }
  }
}

function addAgent(bucket: HourBucket, entry: RolledDecision): void {
  const tier = analyticsTier(entry.trustTier);
  const slot = tier === '' ? ANALYTICS_TIERS.length : ANALYTICS_TIERS.indexOf(tier);
  const tiers = getOr(bucket.agents, entry.agentId!, (): Array<AgentTotals | undefined> => []);
  let agent = tiers[slot];
  if (agent === undefined) {
    agent = { ...zeroCounts(), orgId: bucket.orgId, hour: bucket.hour, agentId: entry.agentId!, tier, agentName: entry.agentName, latencyUs: 0, latencyCount: 0, lastTs: entry.ts };
    tiers[slot] = agent;
  }
  count(agent, entry.allowed);
  if (entry.latencyUs !== null) {
    agent.latencyUs += entry.latencyUs;
    agent.latencyCount++;
  }
  if (entry.ts >= agent.lastTs) {
    agent.lastTs = entry.ts;
    agent.agentName = entry.agentName;
  }
}

function addPairs(bucket: HourBucket, chain: readonly string[]): void {
  for (let i = 0; i + 1 < chain.length; i++) {
    const delegates = getOr(bucket.pairs, chain[i], () => new Map<string, PairTotals>());
    let pair = delegates.get(chain[i + 1]);
    if (pair === undefined) {
      pair = { orgId: bucket.orgId, hour: bucket.hour, fromAgent: chain[i], toAgent: chain[i + 1], count: 0 };
      delegates.set(chain[i + 1], pair);
    }
    pair.count++;
  }
}

function zeroCounts(): Counts {
  return { requests: 0, allowed: 0, denied: 0 };
}

function count(counts: Counts, allowed: boolean): void {
  counts.requests++;
  if (allowed) counts.allowed++;
  else counts.denied++;
}

function getOr<T>(map: Map<string, T>, key: string, create: () => T): T {
  let value = map.get(key);
  if (value === undefined) {
    value = create();
    map.set(key, value);
  }
  return value;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

const UPSERT_HOURLY_SQL = `INSERT INTO analytics_hourly AS r
    (org_id, hour, requests, allowed, denied, rule_matched, latency_us, latency_count, delegated, delegated_denied, depth_sum)
  SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[], $8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[])
  ON CONFLICT (org_id, hour) DO UPDATE SET
    requests = r.requests + EXCLUDED.requests, allowed = r.allowed + EXCLUDED.allowed, denied = r.denied + EXCLUDED.denied,
    rule_matched = r.rule_matched + EXCLUDED.rule_matched, latency_us = r.latency_us + EXCLUDED.latency_us,
    latency_count = r.latency_count + EXCLUDED.latency_count, delegated = r.delegated + EXCLUDED.delegated,
    delegated_denied = r.delegated_denied + EXCLUDED.delegated_denied, depth_sum = r.depth_sum + EXCLUDED.depth_sum`;

const UPSERT_AGENTS_SQL = `INSERT INTO analytics_agent_hourly AS r
    (org_id, hour, agent_id, tier, agent_name, requests, allowed, denied, latency_us, latency_count, last_ts)
  SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::bigint[], $8::bigint[], $9::bigint[], $10::bigint[], $11::timestamptz[])
  ON CONFLICT (org_id, hour, agent_id, tier) DO UPDATE SET
    requests = r.requests + EXCLUDED.requests, allowed = r.allowed + EXCLUDED.allowed, denied = r.denied + EXCLUDED.denied,
    latency_us = r.latency_us + EXCLUDED.latency_us, latency_count = r.latency_count + EXCLUDED.latency_count,
    agent_name = CASE WHEN EXCLUDED.last_ts >= r.last_ts THEN EXCLUDED.agent_name ELSE r.agent_name END,
    last_ts = greatest(r.last_ts, EXCLUDED.last_ts)`;

const UPSERT_POLICIES_SQL = `INSERT INTO analytics_policy_hourly AS r (org_id, hour, policy_name, action, requests, allowed, denied)
  SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::text[], $5::bigint[], $6::bigint[], $7::bigint[])
  ON CONFLICT (org_id, hour, policy_name, action) DO UPDATE SET
    requests = r.requests + EXCLUDED.requests, allowed = r.allowed + EXCLUDED.allowed, denied = r.denied + EXCLUDED.denied`;

const UPSERT_PAIRS_SQL = `INSERT INTO analytics_delegation_hourly AS r (org_id, hour, from_agent, to_agent, count)
  SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::text[], $5::bigint[])
  ON CONFLICT (org_id, hour, from_agent, to_agent) DO UPDATE SET count = r.count + EXCLUDED.count`;

/** The rollup tables, for retention and rebuilds. */
export const ROLLUP_TABLES = ['analytics_hourly', 'analytics_agent_hourly', 'analytics_policy_hourly', 'analytics_delegation_hourly'] as const;

const ALLOWED = `count(*) FILTER (WHERE e.decision = 'allow') AS allowed`;
const DENIED = `count(*) FILTER (WHERE e.decision <> 'allow') AS denied`;

/** A rollup table and the query computing its rows straight from audit_entries. */
export interface RollupQuery {
  table: (typeof ROLLUP_TABLES)[number];
  /** Its columns, in the order `select` returns them. */
  columns: string;
  select: string;
}

/**
 * The rollups computed straight from the decision entries of audit_entries matching `where`
 * (SQL on the alias `e`): what fills the rollup tables from entries written before them (the
 * migration, the bench's bulk load), and what tests compare the incremental rollups with.
 */
export function rollupsFromEntries(where: string): RollupQuery[] {
  const hour = `(date_trunc('hour', e.ts AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')`;
  const latencyUs = `round(coalesce(e.latency_ms, e.decision_latency_ms) * 1000)::bigint`;
  const depth = `greatest(coalesce(json_array_length(e.delegation_chain), 1), 1)`;
  const decisions = `FROM audit_entries e WHERE e.kind = 'decision' AND (${where})`;
  return [
    {
      table: 'analytics_hourly',
      columns: 'org_id, hour, requests, allowed, denied, rule_matched, latency_us, latency_count, delegated, delegated_denied, depth_sum',
      select: `SELECT e.org_id, ${hour} AS hour, count(*) AS requests, ${ALLOWED}, ${DENIED},
         count(*) FILTER (WHERE e.rule IS NOT NULL) AS rule_matched, coalesce(sum(${latencyUs}), 0) AS latency_us, count(${latencyUs}) AS latency_count,
         count(*) FILTER (WHERE ${depth} > 1) AS delegated, count(*) FILTER (WHERE ${depth} > 1 AND e.decision <> 'allow') AS delegated_denied, sum(${depth}) AS depth_sum
       ${decisions} GROUP BY 1, 2`,
    },
    {
      table: 'analytics_agent_hourly',
      columns: 'org_id, hour, agent_id, tier, agent_name, requests, allowed, denied, latency_us, latency_count, last_ts',
      select: `SELECT e.org_id, ${hour} AS hour, e.agent_id, ${analyticsTierSql('e.trust_tier')} AS tier,
         (array_agg(e.agent_name ORDER BY e.ts DESC, e.seq DESC))[1] AS agent_name, count(*) AS requests, ${ALLOWED}, ${DENIED},
         coalesce(sum(${latencyUs}), 0) AS latency_us, count(${latencyUs}) AS latency_count, max(e.ts) AS last_ts
       ${decisions} AND e.agent_id IS NOT NULL GROUP BY 1, 2, 3, 4`,
    },
    {
      table: 'analytics_policy_hourly',
      columns: 'org_id, hour, policy_name, action, requests, allowed, denied',
      select: `SELECT e.org_id, ${hour} AS hour, e.policy_name, e.action, count(*) AS requests, ${ALLOWED}, ${DENIED}
       ${decisions} AND e.policy_name IS NOT NULL GROUP BY 1, 2, 3, 4`,
    },
    {
      table: 'analytics_delegation_hourly',
      columns: 'org_id, hour, from_agent, to_agent, count',
      select: `SELECT e.org_id, ${hour} AS hour, pair.from_agent, pair.to_agent, count(*) AS count
       FROM audit_entries e
         CROSS JOIN LATERAL (
           SELECT link.value AS from_agent, e.delegation_chain ->> link.position::int AS to_agent
           FROM json_array_elements_text(e.delegation_chain) WITH ORDINALITY AS link(value, position)
           WHERE link.position < json_array_length(e.delegation_chain)
         ) pair
       WHERE e.kind = 'decision' AND e.delegation_chain IS NOT NULL AND (${where})
       GROUP BY 1, 2, 3, 4`,
    },
  ];
}

/** The statements filling the rollup tables from the entries matching `where` (see `rollupsFromEntries`). */
export function fillRollupsSql(where: string): string[] {
  return rollupsFromEntries(where).map(({ table, columns, select }) => `INSERT INTO ${table} (${columns}) ${select}`);
}

/** SQL mapping a recorded tier (any alias) to its analytics name, '' for none. */
export function analyticsTierSql(column: string): string {
  const cases = TIER_NAMES.map((name) => `WHEN '${name}' THEN '${analyticsTier(name)}'`).join(' ');
  return `(CASE ${column} ${cases} ELSE '' END)`;
}

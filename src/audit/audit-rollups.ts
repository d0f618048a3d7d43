/**
 * Analytics rollups: decision counts per organization and UTC hour, and per agent, policy and
 * action, and delegation pair in that hour, kept up to date by the audit batch store in the
 * transaction that writes the entries, so they never disagree with the trail. The batch is
 * aggregated in memory and each table gets one upsert (one row per key). Plain code with no
 * Nest: the audit worker thread runs it.
 */
import { canonicalTier, TIER_NAMES, TrustTier } from '../policy-engine/tiers';
import { AUDIT_TEXT_INDEX, copyValue } from './audit-entry';
import type { SqlClient } from './sql-client';

export const HOUR_MS = 3_600_000;

/** Trust tiers as analytics reports them (SPEC.md "Trust tiers"), lowest first. */
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

/**
 * The fields of a queued entry the rollups need, read from its content (canonical text from
 * `source` on) by column position; null for an admin entry, which analytics do not count.
 */
export function rolledDecision(orgIdText: string, ts: number, content: string): RolledDecision | null {
  const fields = content.split('\t', CONTENT_INDEX.input);
  if (fields[CONTENT_INDEX.kind] !== 'decision') return null;
  const latency = copyValue(fields[CONTENT_INDEX.latencyMs]) ?? copyValue(fields[CONTENT_INDEX.decisionLatencyMs]);
  const chain = copyValue(fields[CONTENT_INDEX.delegationChain]);
  return {
    orgId: copyValue(orgIdText)!,
    ts,
    agentId: copyValue(fields[CONTENT_INDEX.agentId]),
    agentName: copyValue(fields[CONTENT_INDEX.agentName]),
    trustTier: copyValue(fields[CONTENT_INDEX.trustTier]),
    action: copyValue(fields[CONTENT_INDEX.action])!,
    allowed: fields[CONTENT_INDEX.decision] === 'allow',
    policyName: copyValue(fields[CONTENT_INDEX.policyName]),
    ruleMatched: fields[CONTENT_INDEX.rule] !== '\\N',
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

/** One batch's rollups, aggregated in memory, then written with one upsert per table. */
export class BatchRollups {
  private readonly hours = new Map<string, HourTotals>();
  private readonly agents = new Map<string, AgentTotals>();
  private readonly policies = new Map<string, PolicyTotals>();
  private readonly pairs = new Map<string, PairTotals>();

  add(entry: RolledDecision): void {
    const hour = entry.ts - (((entry.ts % HOUR_MS) + HOUR_MS) % HOUR_MS);
    const hourKey = `${entry.orgId}\u0000${hour}`;
    const depth = entry.delegationChain === null || entry.delegationChain.length === 0 ? 1 : entry.delegationChain.length;
    const totals = getOr(this.hours, hourKey, () => ({ ...zeroCounts(), orgId: entry.orgId, hour, ruleMatched: 0, latencyUs: 0, latencyCount: 0, delegated: 0, delegatedDenied: 0, depthSum: 0 }));
    count(totals, entry.allowed);
    if (entry.ruleMatched) totals.ruleMatched++;
    if (entry.latencyUs !== null) {
      totals.latencyUs += entry.latencyUs;
      totals.latencyCount++;
    }
    totals.depthSum += depth;
    if (depth > 1) {
      totals.delegated++;
      if (!entry.allowed) totals.delegatedDenied++;
      this.addPairs(entry.orgId, hour, entry.delegationChain!);
    }
    if (entry.agentId !== null) this.addAgent(entry, hour);
    if (entry.policyName !== null) {
      const policy = getOr(this.policies, `${hourKey}\u0000${entry.policyName}\u0000${entry.action}`, () => ({ ...zeroCounts(), orgId: entry.orgId, hour, policyName: entry.policyName!, action: entry.action }));
      count(policy, entry.allowed);
    }
  }

  private addAgent(entry: RolledDecision, hour: number): void {
    const tier = analyticsTier(entry.trustTier);
    const agent = getOr(this.agents, `${entry.orgId}\u0000${hour}\u0000${entry.agentId}\u0000${tier}`, () => ({
      ...zeroCounts(),
      orgId: entry.orgId,
      hour,
      agentId: entry.agentId!,
      tier,
      agentName: entry.agentName,
      latencyUs: 0,
      latencyCount: 0,
      lastTs: entry.ts,
    }));
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

  private addPairs(orgId: string, hour: number, chain: readonly string[]): void {
    for (let i = 0; i + 1 < chain.length; i++) {
      const pair = getOr(this.pairs, `${orgId}\u0000${hour}\u0000${chain[i]}\u0000${chain[i + 1]}`, () => ({ orgId, hour, fromAgent: chain[i], toAgent: chain[i + 1], count: 0 }));
      pair.count++;
    }
  }

  /** Adds the batch to the rollup tables (inside the caller's transaction). */
  async write(client: SqlClient): Promise<void> {
    if (this.hours.size === 0) return;
    const hours = [...this.hours.values()];
    await client.query(UPSERT_HOURLY_SQL, [
      hours.map((row) => row.orgId),
      hours.map((row) => iso(row.hour)),
      ...(['requests', 'allowed', 'denied', 'ruleMatched', 'latencyUs', 'latencyCount', 'delegated', 'delegatedDenied', 'depthSum'] as const).map((key) => hours.map((row) => row[key])),
    ]);
    const agents = [...this.agents.values()];
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
    const policies = [...this.policies.values()];
    if (policies.length > 0) {
      await client.query(UPSERT_POLICIES_SQL, [
        policies.map((row) => row.orgId),
        policies.map((row) => iso(row.hour)),
        policies.map((row) => row.policyName),
        policies.map((row) => row.action),
        ...(['requests', 'allowed', 'denied'] as const).map((key) => policies.map((row) => row[key])),
      ]);
    }
    const pairs = [...this.pairs.values()];
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

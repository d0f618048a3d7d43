import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { ANALYTICS_TIERS, HOUR_MS } from '../audit/audit-rollups';
import type { Period } from '../audit/audit.dto';
import { analyticsWindow } from './analytics-period';
import {
  AgentSort,
  AgentStat,
  AgentsView,
  Bucket,
  DelegationsView,
  LatencyHeatmapView,
  OverviewView,
  PoliciesView,
  ShadowPoliciesView,
  TimeseriesPoint,
  TimeseriesView,
  TrustDistributionView,
} from './analytics.dto';

const DAY_MS = 24 * HOUR_MS;
const TOP_PAIRS = 10;

/** Decision counts of a window, from the hourly rollups. */
export interface DecisionCounts {
  requests: number;
  allowed: number;
  denied: number;
}

type Row = Record<string, string | number | boolean | Date | null>;

/**
 * Analytics of an organization's decisions (every entry point; admin changes excluded), read
 * from the hourly rollups the audit batch store keeps (src/gateway/audit/audit-rollups.ts), never from
 * the audit trail itself: each answer reads at most one row per hour (and per agent, policy and
 * action, or delegation link) of the period.
 */
@Injectable()
export class AnalyticsService {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** Requests, allowed and denied in `period` up to `nowMs`: what GET /admin/audit/stats reports. */
  async counts(orgId: string, period: Period, nowMs = Date.now()): Promise<DecisionCounts> {
    const { from, to } = analyticsWindow(period, nowMs);
    const [row] = await this.query(
      `SELECT coalesce(sum(requests), 0) AS requests, coalesce(sum(allowed), 0) AS allowed, coalesce(sum(denied), 0) AS denied
       FROM analytics_hourly WHERE org_id = $1 AND hour >= $2 AND hour < $3`,
      [orgId, from, to],
    );
    return { requests: num(row.requests), allowed: num(row.allowed), denied: num(row.denied) };
  }

  async overview(orgId: string, period: Period, nowMs = Date.now()): Promise<OverviewView> {
    const window = analyticsWindow(period, nowMs);
    const [totals, agents] = await Promise.all([
      this.query(
        `SELECT (hour >= $2) AS current, sum(requests) AS requests, sum(rule_matched) AS rule_matched, sum(latency_us) AS latency_us, sum(latency_count) AS latency_count
         FROM analytics_hourly WHERE org_id = $1 AND hour >= $3 AND hour < $4 GROUP BY 1`,
        [orgId, window.from, window.priorFrom, window.to],
      ),
      this.query(
        `SELECT count(*) FILTER (WHERE current) AS current, count(*) FILTER (WHERE prior) AS prior
         FROM (SELECT bool_or(hour >= $2) AS current, bool_or(hour < $2) AS prior
               FROM analytics_agent_hourly WHERE org_id = $1 AND hour >= $3 AND hour < $4 GROUP BY agent_id) agents`,
        [orgId, window.from, window.priorFrom, window.to],
      ),
    ]);
    const summary = (current: boolean) => {
      const row = totals.find((candidate) => candidate.current === current);
      const requests = num(row?.requests);
      return {
        requests,
        enforcementRate: percent(num(row?.rule_matched), requests),
        avgLatencyMs: averageMs(num(row?.latency_us), num(row?.latency_count)),
      };
    };
    const now = summary(true);
    const before = summary(false);
    const activeAgents = num(agents[0].current);
    return {
      period,
      totalRequests: now.requests,
      enforcementRate: now.enforcementRate,
      activeAgents,
      avgLatencyMs: now.avgLatencyMs,
      trends: {
        totalRequests: percentChange(now.requests, before.requests),
        enforcementRate: round(now.enforcementRate - before.enforcementRate, 2),
        activeAgents: activeAgents - num(agents[0].prior),
        avgLatencyMs: round(now.avgLatencyMs - before.avgLatencyMs, 3),
      },
    };
  }

  async timeseries(orgId: string, period: Period, bucket: Bucket, nowMs = Date.now()): Promise<TimeseriesView> {
    const { from, to } = analyticsWindow(period, nowMs);
    const rows = await this.query('SELECT hour, allowed, denied FROM analytics_hourly WHERE org_id = $1 AND hour >= $2 AND hour < $3', [orgId, from, to]);
    const size = bucket === 'day' ? DAY_MS : HOUR_MS;
    const start = (ms: number) => ms - (ms % size);
    const points = new Map<number, TimeseriesPoint>();
    for (let time = start(from.getTime()); time < to.getTime(); time += size) points.set(time, { time: new Date(time).toISOString(), allowed: 0, denied: 0 });
    for (const row of rows) {
      const point = points.get(start((row.hour as Date).getTime()))!;
      point.allowed += num(row.allowed);
      point.denied += num(row.denied);
    }
    return { period, bucket, data: [...points.values()] };
  }

  async agents(orgId: string, period: Period, sort: AgentSort, limit: number, nowMs = Date.now()): Promise<AgentsView> {
    const { from, to } = analyticsWindow(period, nowMs);
    const order = {
      requests: 'requests DESC',
      denied: 'denied DESC, requests DESC',
      latency: 'latency_us::float8 / nullif(latency_count, 0) DESC NULLS LAST, requests DESC',
    }[sort];
    const rows = await this.query(
      `WITH totals AS (
         SELECT agent_id, sum(requests) AS requests, sum(allowed) AS allowed, sum(denied) AS denied,
                sum(latency_us) AS latency_us, sum(latency_count) AS latency_count, max(last_ts) AS last_ts
         FROM analytics_agent_hourly WHERE org_id = $1 AND hour >= $2 AND hour < $3 GROUP BY agent_id),
       top AS (SELECT * FROM totals ORDER BY ${order}, agent_id LIMIT $4)
       SELECT top.*, latest.agent_name, latest.tier FROM top
       CROSS JOIN LATERAL (
         SELECT agent_name, tier FROM analytics_agent_hourly r
         WHERE r.org_id = $1 AND r.agent_id = top.agent_id AND r.hour >= $2 AND r.hour < $3
         ORDER BY r.hour DESC, r.last_ts DESC LIMIT 1) latest
       ORDER BY ${order}, agent_id`,
      [orgId, from, to, limit],
    );
    return { period, sort, agents: rows.map(agentStat) };
  }

  async policies(orgId: string, period: Period, nowMs = Date.now()): Promise<PoliciesView> {
    const { from, to } = analyticsWindow(period, nowMs);
    const rows = await this.query(
      `WITH per_action AS (
         SELECT policy_name, action, sum(requests) AS requests, sum(allowed) AS allowed, sum(denied) AS denied
         FROM analytics_policy_hourly WHERE org_id = $1 AND hour >= $2 AND hour < $3 AND policy_name <> 'default'
         GROUP BY policy_name, action)
       SELECT policy_name, sum(requests) AS requests, sum(allowed) AS allowed, sum(denied) AS denied,
              (array_agg(action ORDER BY requests DESC, action))[1] AS top_action
       FROM per_action GROUP BY policy_name ORDER BY sum(requests) DESC, policy_name`,
      [orgId, from, to],
    );
    return {
      period,
      policies: rows.map((row) => {
        const triggered = num(row.requests);
        return { name: String(row.policy_name), triggered, allowRate: percent(num(row.allowed), triggered), denyRate: percent(num(row.denied), triggered), topAction: String(row.top_action) };
      }),
    };
  }

  /**
   * What each shadow policy would have done over the period (docs/policies.md "Shadow
   * policies"), from the `shadow` results of the decision entries. Unlike the other answers it
   * reads the audit trail of the period, not the rollups: shadow policies are meant to run for
   * a trial period, and only entries carrying shadow results are unfolded.
   */
  async shadow(orgId: string, period: Period, nowMs = Date.now()): Promise<ShadowPoliciesView> {
    const { from, to } = analyticsWindow(period, nowMs);
    const unfolded = `WITH shadow AS (
         SELECT e.agent_id, e.agent_name, e.action, e.decision, s->>'policy' AS policy, s->>'decision' <> 'allow' AS denies
         FROM audit_entries e CROSS JOIN LATERAL json_array_elements(e.details->'shadow') s
         WHERE e.org_id = $1 AND e.ts >= $2 AND e.ts < $3 AND e.kind = 'decision' AND json_typeof(e.details->'shadow') = 'array')`;
    const [totals, hits] = await Promise.all([
      this.query(
        `${unfolded}
         SELECT policy, count(*) AS evaluated, count(*) FILTER (WHERE denies) AS would_deny, count(*) FILTER (WHERE denies AND decision = 'allow') AS would_flip
         FROM shadow GROUP BY policy ORDER BY policy`,
        [orgId, from, to],
      ),
      this.query(
        `${unfolded}, ranked AS (
           SELECT policy, kind, key, name, count, row_number() OVER (PARTITION BY policy, kind ORDER BY count DESC, key) AS place FROM (
             SELECT policy, 'agent' AS kind, agent_id AS key, max(agent_name) AS name, count(*) AS count FROM shadow WHERE denies AND agent_id IS NOT NULL GROUP BY policy, agent_id
             UNION ALL
             SELECT policy, 'action', action, NULL, count(*) FROM shadow WHERE denies GROUP BY policy, action) grouped)
         SELECT policy, kind, key, name, count FROM ranked WHERE place <= 5 ORDER BY policy, kind, place`,
        [orgId, from, to],
      ),
    ]);
    return {
      period,
      policies: totals.map((row) => {
        const name = String(row.policy);
        const evaluated = num(row.evaluated);
        const hitsOf = (kind: string) =>
          hits.filter((hit) => hit.policy === name && hit.kind === kind).map((hit) => ({ key: String(hit.key), ...(hit.name === null ? {} : { name: String(hit.name) }), count: num(hit.count) }));
        return { name, evaluated, wouldDeny: num(row.would_deny), wouldDenyRate: percent(num(row.would_deny), evaluated), wouldFlip: num(row.would_flip), topAgents: hitsOf('agent'), topActions: hitsOf('action') };
      }),
    };
  }

  async delegations(orgId: string, period: Period, nowMs = Date.now()): Promise<DelegationsView> {
    const { from, to } = analyticsWindow(period, nowMs);
    const [[totals], pairs] = await Promise.all([
      this.query(
        `SELECT sum(requests) AS requests, sum(depth_sum) AS depth_sum, sum(delegated) AS delegated, sum(delegated_denied) AS delegated_denied
         FROM analytics_hourly WHERE org_id = $1 AND hour >= $2 AND hour < $3`,
        [orgId, from, to],
      ),
      this.query(
        `WITH top AS (
           SELECT from_agent, to_agent, sum(count) AS count FROM analytics_delegation_hourly
           WHERE org_id = $1 AND hour >= $2 AND hour < $3 GROUP BY from_agent, to_agent
           ORDER BY count DESC, from_agent, to_agent LIMIT $4)
         SELECT coalesce(f.name, top.from_agent) AS from_name, coalesce(t.name, top.to_agent) AS to_name, top.count
         FROM top LEFT JOIN agents f ON f.id = top.from_agent AND f.org_id = $1 LEFT JOIN agents t ON t.id = top.to_agent AND t.org_id = $1
         ORDER BY top.count DESC, from_name, to_name`,
        [orgId, from, to, TOP_PAIRS],
      ),
    ]);
    const requests = num(totals.requests);
    return {
      period,
      totalChains: num(totals.delegated),
      avgDepth: requests === 0 ? 0 : round(num(totals.depth_sum) / requests, 2),
      blockedChains: num(totals.delegated_denied),
      topPairs: pairs.map((row) => ({ fromAgent: String(row.from_name), toAgent: String(row.to_name), count: num(row.count) })),
    };
  }

  async trustDistribution(orgId: string, period: Period, nowMs = Date.now()): Promise<TrustDistributionView> {
    const { from, to } = analyticsWindow(period, nowMs);
    const rows = await this.query(
      `SELECT tier, count(*) AS agents, sum(requests) AS requests
       FROM (SELECT tier, agent_id, sum(requests) AS requests FROM analytics_agent_hourly
             WHERE org_id = $1 AND hour >= $2 AND hour < $3 AND tier <> '' GROUP BY tier, agent_id) per_agent
       GROUP BY tier`,
      [orgId, from, to],
    );
    const total = rows.reduce((sum, row) => sum + num(row.requests), 0);
    return {
      period,
      tiers: ANALYTICS_TIERS.map((tier) => {
        const row = rows.find((candidate) => candidate.tier === tier);
        const requestCount = num(row?.requests);
        return { tier, agentCount: num(row?.agents), requestCount, pct: percent(requestCount, total) };
      }),
    };
  }

  async latencyHeatmap(orgId: string, period: Period, nowMs = Date.now()): Promise<LatencyHeatmapView> {
    const { from, to } = analyticsWindow(period, nowMs);
    const rows = await this.query(
      `SELECT extract(dow FROM hour AT TIME ZONE 'UTC')::int AS day, extract(hour FROM hour AT TIME ZONE 'UTC')::int AS hour_of_day,
              sum(requests) AS requests, sum(latency_us) AS latency_us, sum(latency_count) AS latency_count
       FROM analytics_hourly WHERE org_id = $1 AND hour >= $2 AND hour < $3 GROUP BY 1, 2 HAVING sum(requests) > 0 ORDER BY 1, 2`,
      [orgId, from, to],
    );
    return {
      period,
      cells: rows.map((row) => ({ dayOfWeek: num(row.day), hourOfDay: num(row.hour_of_day), avgLatencyMs: averageMs(num(row.latency_us), num(row.latency_count)), count: num(row.requests) })),
    };
  }

  private query(sql: string, params: unknown[]): Promise<Row[]> {
    return this.dataSource.query(sql, params);
  }
}

function agentStat(row: Row): AgentStat {
  return {
    id: String(row.agent_id),
    name: row.agent_name === null ? null : String(row.agent_name),
    trustTier: row.tier === '' || row.tier === null ? null : String(row.tier),
    requests: num(row.requests),
    allowed: num(row.allowed),
    denied: num(row.denied),
    avgLatencyMs: averageMs(num(row.latency_us), num(row.latency_count)),
    lastActive: (row.last_ts as Date).toISOString(),
  };
}

/** A count or sum as the driver returns it (bigint and numeric as strings; null for a sum of nothing). */
function num(value: string | number | boolean | Date | null | undefined): number {
  return value === null || value === undefined ? 0 : Number(value);
}

function round(value: number, digits: number): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

function percent(part: number, whole: number): number {
  return whole === 0 ? 0 : round((part / whole) * 100, 2);
}

function averageMs(sumUs: number, count: number): number {
  return count === 0 ? 0 : round(sumUs / count / 1000, 3);
}

/** Percent change; from a zero baseline: 0 if still zero, else 100. */
function percentChange(current: number, prior: number): number {
  if (prior === 0) return current === 0 ? 0 : 100;
  return round(((current - prior) / prior) * 100, 2);
}

import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The rollups of the entries already recorded, as the audit writer computed them when this
 * migration was written (frozen here: a migration must not change with the code after it).
 */
const FILL_ROLLUPS: readonly string[] = [
  "INSERT INTO analytics_hourly (org_id, hour, requests, allowed, denied, rule_matched, latency_us, latency_count, delegated, delegated_denied, depth_sum) SELECT e.org_id, (date_trunc('hour', e.ts AT TIME ZONE 'UTC') AT TIME ZONE 'UTC') AS hour, count(*) AS requests, count(*) FILTER (WHERE e.decision = 'allow') AS allowed, count(*) FILTER (WHERE e.decision <> 'allow') AS denied,\n         count(*) FILTER (WHERE e.rule IS NOT NULL) AS rule_matched, coalesce(sum(round(coalesce(e.latency_ms, e.decision_latency_ms) * 1000)::bigint), 0) AS latency_us, count(round(coalesce(e.latency_ms, e.decision_latency_ms) * 1000)::bigint) AS latency_count,\n         count(*) FILTER (WHERE greatest(coalesce(json_array_length(e.delegation_chain), 1), 1) > 1) AS delegated, count(*) FILTER (WHERE greatest(coalesce(json_array_length(e.delegation_chain), 1), 1) > 1 AND e.decision <> 'allow') AS delegated_denied, sum(greatest(coalesce(json_array_length(e.delegation_chain), 1), 1)) AS depth_sum\n       FROM audit_entries e WHERE e.kind = 'decision' AND (true) GROUP BY 1, 2",
  "INSERT INTO analytics_agent_hourly (org_id, hour, agent_id, tier, agent_name, requests, allowed, denied, latency_us, latency_count, last_ts) SELECT e.org_id, (date_trunc('hour', e.ts AT TIME ZONE 'UTC') AT TIME ZONE 'UTC') AS hour, e.agent_id, (CASE e.trust_tier WHEN 'unverified' THEN 'sandboxed' WHEN 'untrusted' THEN 'sandboxed' WHEN 'sandboxed' THEN 'sandboxed' WHEN 'restricted' THEN 'sandboxed' WHEN 'verified' THEN 'verified' WHEN 'standard' THEN 'verified' WHEN 'trusted' THEN 'trusted' WHEN 'elevated' THEN 'trusted' WHEN 'privileged' THEN 'privileged' ELSE '' END) AS tier,\n         (array_agg(e.agent_name ORDER BY e.ts DESC, e.seq DESC))[1] AS agent_name, count(*) AS requests, count(*) FILTER (WHERE e.decision = 'allow') AS allowed, count(*) FILTER (WHERE e.decision <> 'allow') AS denied,\n         coalesce(sum(round(coalesce(e.latency_ms, e.decision_latency_ms) * 1000)::bigint), 0) AS latency_us, count(round(coalesce(e.latency_ms, e.decision_latency_ms) * 1000)::bigint) AS latency_count, max(e.ts) AS last_ts\n       FROM audit_entries e WHERE e.kind = 'decision' AND (true) AND e.agent_id IS NOT NULL GROUP BY 1, 2, 3, 4",
  "INSERT INTO analytics_policy_hourly (org_id, hour, policy_name, action, requests, allowed, denied) SELECT e.org_id, (date_trunc('hour', e.ts AT TIME ZONE 'UTC') AT TIME ZONE 'UTC') AS hour, e.policy_name, e.action, count(*) AS requests, count(*) FILTER (WHERE e.decision = 'allow') AS allowed, count(*) FILTER (WHERE e.decision <> 'allow') AS denied\n       FROM audit_entries e WHERE e.kind = 'decision' AND (true) AND e.policy_name IS NOT NULL GROUP BY 1, 2, 3, 4",
  "INSERT INTO analytics_delegation_hourly (org_id, hour, from_agent, to_agent, count) SELECT e.org_id, (date_trunc('hour', e.ts AT TIME ZONE 'UTC') AT TIME ZONE 'UTC') AS hour, pair.from_agent, pair.to_agent, count(*) AS count\n       FROM audit_entries e\n         CROSS JOIN LATERAL (\n           SELECT link.value AS from_agent, e.delegation_chain ->> link.position::int AS to_agent\n           FROM json_array_elements_text(e.delegation_chain) WITH ORDINALITY AS link(value, position)\n           WHERE link.position < json_array_length(e.delegation_chain)\n         ) pair\n       WHERE e.kind = 'decision' AND e.delegation_chain IS NOT NULL AND (true)\n       GROUP BY 1, 2, 3, 4",
];

/**
 * Analytics rollups: decision counts per organization and UTC hour, and per agent (and tier),
 * policy and action, and delegation pair in that hour. The audit batch store adds each batch
 * to them in the transaction that writes its entries; here they are filled once from the
 * entries already stored. Latencies are summed in whole microseconds (entries keep them to the
 * microsecond), so sums are exact.
 */
export class AnalyticsRollups1763942400000 implements MigrationInterface {
  name = 'AnalyticsRollups1763942400000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      CREATE TABLE analytics_hourly (
        org_id text NOT NULL,
        hour timestamptz NOT NULL,
        requests bigint NOT NULL,
        allowed bigint NOT NULL,
        denied bigint NOT NULL,
        rule_matched bigint NOT NULL,
        latency_us bigint NOT NULL,
        latency_count bigint NOT NULL,
        delegated bigint NOT NULL,
        delegated_denied bigint NOT NULL,
        depth_sum bigint NOT NULL,
        PRIMARY KEY (org_id, hour)
      )`);
    await runner.query(`
      CREATE TABLE analytics_agent_hourly (
        org_id text NOT NULL,
        hour timestamptz NOT NULL,
        agent_id text NOT NULL,
        tier text NOT NULL,
        agent_name text,
        requests bigint NOT NULL,
        allowed bigint NOT NULL,
        denied bigint NOT NULL,
        latency_us bigint NOT NULL,
        latency_count bigint NOT NULL,
        last_ts timestamptz NOT NULL,
        PRIMARY KEY (org_id, hour, agent_id, tier)
      )`);
    // An agent's latest name and tier: its newest hour first.
    await runner.query('CREATE INDEX analytics_agent_hourly_agent ON analytics_agent_hourly (org_id, agent_id, hour)');
    await runner.query(`
      CREATE TABLE analytics_policy_hourly (
        org_id text NOT NULL,
        hour timestamptz NOT NULL,
        policy_name text NOT NULL,
        action text NOT NULL,
        requests bigint NOT NULL,
        allowed bigint NOT NULL,
        denied bigint NOT NULL,
        PRIMARY KEY (org_id, hour, policy_name, action)
      )`);
    await runner.query(`
      CREATE TABLE analytics_delegation_hourly (
        org_id text NOT NULL,
        hour timestamptz NOT NULL,
        from_agent text NOT NULL,
        to_agent text NOT NULL,
        count bigint NOT NULL,
        PRIMARY KEY (org_id, hour, from_agent, to_agent)
      )`);
    for (const sql of FILL_ROLLUPS) await runner.query(sql);
  }

  async down(runner: QueryRunner): Promise<void> {
    for (const table of ['analytics_delegation_hourly', 'analytics_policy_hourly', 'analytics_agent_hourly', 'analytics_hourly']) await runner.query(`DROP TABLE ${table}`);
  }
}

import { MigrationInterface, QueryRunner } from 'typeorm';
import { fillRollupsSql } from '../src/audit/audit-rollups';

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
    for (const sql of fillRollupsSql('true')) await runner.query(sql);
  }

  async down(runner: QueryRunner): Promise<void> {
    for (const table of ['analytics_delegation_hourly', 'analytics_policy_hourly', 'analytics_agent_hourly', 'analytics_hourly']) await runner.query(`DROP TABLE ${table}`);
  }
}

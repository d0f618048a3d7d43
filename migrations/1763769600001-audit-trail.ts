import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The audit trail: partitioned by day on `ts` so retention drops whole partitions, and a
 * per-organization hash-chain head so deletions at the end of the chain are detected too.
 * Partitions are created by the writer as days come (see AuditPartitions).
 */
export class AuditTrail1763769600001 implements MigrationInterface {
  name = 'AuditTrail1763769600001';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      CREATE TABLE audit_entries (
        id text NOT NULL,
        ts timestamptz NOT NULL,
        org_id text NOT NULL,
        seq bigint NOT NULL,
        source text NOT NULL,
        kind text NOT NULL,
        trace_id text,
        agent_id text,
        agent_name text,
        trust_tier text,
        action text NOT NULL,
        method text,
        path text,
        decision text NOT NULL,
        enforced boolean NOT NULL,
        rate_limited boolean NOT NULL,
        policy_name text,
        rule text,
        reason text,
        decision_latency_ms double precision,
        latency_ms double precision,
        status integer,
        upstream_status integer,
        delegation_chain jsonb,
        input jsonb,
        details jsonb,
        prev_hash text NOT NULL,
        hash text NOT NULL,
        PRIMARY KEY (ts, id)
      ) PARTITION BY RANGE (ts)`);
    await runner.query(`CREATE INDEX audit_entries_org_ts ON audit_entries (org_id, ts DESC, id DESC)`);
    await runner.query(`CREATE INDEX audit_entries_org_seq ON audit_entries (org_id, seq)`);
    await runner.query(`CREATE INDEX audit_entries_org_agent_ts ON audit_entries (org_id, agent_id, ts DESC)`);
    await runner.query(`
      CREATE TABLE audit_chain_heads (
        org_id text PRIMARY KEY,
        seq bigint NOT NULL,
        hash text NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE audit_chain_heads');
    await runner.query('DROP TABLE audit_entries');
  }
}

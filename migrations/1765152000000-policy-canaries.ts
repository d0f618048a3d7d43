import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Canary rollouts of policies (docs/policies.md "Canary rollouts"): a new version of one policy
 * in force for a share of the organization's agents, compared with the rest and then promoted,
 * rolled back or aborted. At most one runs per organization (the partial unique index).
 */
export class PolicyCanaries1765152000000 implements MigrationInterface {
  name = 'PolicyCanaries1765152000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      CREATE TABLE policy_canaries (
        id text PRIMARY KEY,
        org_id text NOT NULL REFERENCES organizations (id),
        policy_name text NOT NULL,
        source text NOT NULL,
        definition jsonb NOT NULL,
        share integer NOT NULL CHECK (share BETWEEN 1 AND 99),
        window_ms bigint NOT NULL,
        margin double precision NOT NULL,
        min_decisions integer NOT NULL,
        state text NOT NULL,
        started_by text NOT NULL,
        started_at timestamptz NOT NULL DEFAULT now(),
        ended_by text,
        ended_at timestamptz,
        outcome text,
        stats jsonb
      )`);
    await runner.query(`CREATE UNIQUE INDEX policy_canaries_running ON policy_canaries (org_id) WHERE state = 'running'`);
    await runner.query('CREATE INDEX policy_canaries_org_started ON policy_canaries (org_id, started_at DESC)');
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE policy_canaries');
  }
}

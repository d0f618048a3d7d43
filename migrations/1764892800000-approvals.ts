import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Human approvals (docs/approvals.md): a request a `require_approval` rule held, bound to its
 * agent, action and request fingerprint, waiting for a person until it expires; used once.
 */
export class Approvals1764892800000 implements MigrationInterface {
  name = 'Approvals1764892800000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      CREATE TABLE approvals (
        id text PRIMARY KEY,
        org_id text NOT NULL REFERENCES organizations (id),
        status text NOT NULL,
        agent_id text NOT NULL,
        agent_name text NOT NULL,
        source text NOT NULL,
        action text NOT NULL,
        method text,
        path text,
        fingerprint text NOT NULL,
        policy text NOT NULL,
        rule text,
        reason text NOT NULL,
        approvers json NOT NULL,
        trace_id text,
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL,
        decided_by text,
        decided_at timestamptz,
        comment text,
        used_at timestamptz
      )`);
    await runner.query('CREATE INDEX approvals_org_created ON approvals (org_id, created_at DESC)');
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE approvals');
  }
}

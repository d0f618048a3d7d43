import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Policies per organization with their source text, and the history of every change under a
 * per-organization version number (one version per change set, e.g. a whole file reload).
 */
export class Policies1763769600002 implements MigrationInterface {
  name = 'Policies1763769600002';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      CREATE TABLE policies (
        org_id text NOT NULL REFERENCES organizations (id),
        name text NOT NULL,
        description text,
        source text NOT NULL,
        definition jsonb NOT NULL,
        origin text NOT NULL,
        version bigint NOT NULL,
        position bigint NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (org_id, name)
      )`);
    await runner.query(`
      CREATE TABLE policy_versions (
        org_id text NOT NULL REFERENCES organizations (id),
        version bigint NOT NULL,
        policy_name text NOT NULL,
        kind text NOT NULL,
        source text,
        actor text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (org_id, version, policy_name)
      )`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE policy_versions');
    await runner.query('DROP TABLE policies');
  }
}

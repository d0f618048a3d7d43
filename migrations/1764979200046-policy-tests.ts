import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * An organization's stored policy tests (docs/policies.md "Tests in files"): test files a policy
 * change must pass unless forced.
 */
export class PolicyTests1764979200046 implements MigrationInterface {
  name = 'PolicyTests1764979200046';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      CREATE TABLE policy_tests (
        org_id text NOT NULL REFERENCES organizations (id),
        name text NOT NULL,
        source text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (org_id, name)
      )`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE policy_tests');
  }
}

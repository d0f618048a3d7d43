import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * An organization's git source configured through the admin API (docs/policies.md "Policies
 * from git"): the repository, branch, folder and poll interval its policies follow, and the SSH
 * allowed-signers file's text when commits must be signed. One per organization.
 */
export class PolicyGitSources1765238400470 implements MigrationInterface {
  name = 'PolicyGitSources1765238400470';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`CREATE TABLE policy_git_sources (
      org_id text PRIMARY KEY REFERENCES organizations(id) ON DELETE CASCADE,
      url text NOT NULL,
      branch text NOT NULL,
      path text NOT NULL,
      poll_ms bigint NOT NULL,
      allowed_signers text,
      updated_by text NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
    )`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE policy_git_sources');
  }
}

import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A canary rollout's cohorts are counted incrementally (docs/policies.md "Canary rollouts"):
 * `stats` holds the counts over the organization's audit entries up to `counted_seq` in its hash
 * chain, so each comparison reads only the entries recorded since the last one.
 */
export class PolicyCanaryCounted1765152000200 implements MigrationInterface {
  name = 'PolicyCanaryCounted1765152000200';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query('ALTER TABLE policy_canaries ADD COLUMN counted_seq bigint NOT NULL DEFAULT 0');
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('ALTER TABLE policy_canaries DROP COLUMN counted_seq');
  }
}

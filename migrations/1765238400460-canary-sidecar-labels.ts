import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Canary rollouts to labelled sidecars (docs/policies.md "Canary rollouts"): a rollout names
 * either a share of the agents or the labels of the sidecars that decide on its new version, and
 * every sidecar's labels (X-Sidecar-Labels of its last bundle fetch) are kept for the fleet status.
 */
export class CanarySidecarLabels1765238400460 implements MigrationInterface {
  name = 'CanarySidecarLabels1765238400460';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query('ALTER TABLE policy_canaries ALTER COLUMN share DROP NOT NULL');
    await runner.query('ALTER TABLE policy_canaries ADD COLUMN sidecar_labels jsonb');
    await runner.query('ALTER TABLE policy_canaries ADD CONSTRAINT policy_canaries_one_target CHECK ((share IS NULL) <> (sidecar_labels IS NULL))');
    await runner.query('ALTER TABLE sidecars ADD COLUMN labels jsonb');
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('ALTER TABLE sidecars DROP COLUMN labels');
    await runner.query('DELETE FROM policy_canaries WHERE share IS NULL');
    await runner.query('ALTER TABLE policy_canaries DROP CONSTRAINT policy_canaries_one_target');
    await runner.query('ALTER TABLE policy_canaries DROP COLUMN sidecar_labels');
    await runner.query('ALTER TABLE policy_canaries ALTER COLUMN share SET NOT NULL');
  }
}

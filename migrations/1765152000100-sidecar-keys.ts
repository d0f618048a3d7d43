import { MigrationInterface, QueryRunner } from 'typeorm';

/** A sidecar token is bound to the first sidecar keys it asked a grant for (docs/security.md "Sidecars"). */
export class SidecarKeys1765152000100 implements MigrationInterface {
  name = 'SidecarKeys1765152000100';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query('ALTER TABLE sidecar_tokens ADD COLUMN sidecar_keys text, ADD COLUMN sidecar_id text, ADD COLUMN bound_at timestamptz');
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('ALTER TABLE sidecar_tokens DROP COLUMN sidecar_keys, DROP COLUMN sidecar_id, DROP COLUMN bound_at');
  }
}

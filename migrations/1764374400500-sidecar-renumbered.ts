import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Entries a sidecar sent under a number already received, with another id: a sidecar that lost
 * its CACHE_DIR counts from 1 again. They are written to the trail; this count shows the fleet
 * status that numbers were reused, so the gap report alone no longer proves completeness.
 */
export class SidecarRenumbered1764374400500 implements MigrationInterface {
  name = 'SidecarRenumbered1764374400500';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query('ALTER TABLE sidecars ADD COLUMN renumbered bigint NOT NULL DEFAULT 0');
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('ALTER TABLE sidecars DROP COLUMN renumbered');
  }
}

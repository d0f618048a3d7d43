import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The highest audit sequence number a sidecar had used when it last fetched its bundle: the
 * fleet status compares it with the numbers received, so entries still held at the edge (or
 * refused by the ingest for good) show instead of a clean `gaps: []`.
 */
export class SidecarReportedSeq1764460800000 implements MigrationInterface {
  name = 'SidecarReportedSeq1764460800000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query('ALTER TABLE sidecars ADD COLUMN reported_seq bigint');
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('ALTER TABLE sidecars DROP COLUMN reported_seq');
  }
}

import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Edge sidecars that synced a bundle, and the audit sequence numbers received from each, kept
 * as ranges (first_seq..last_seq): ingestion is idempotent by (sidecar, seq), and a hole
 * between ranges is a gap the fleet status reports.
 */
export class Sidecars1764201600000 implements MigrationInterface {
  name = 'Sidecars1764201600000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      CREATE TABLE sidecars (
        org_id text NOT NULL REFERENCES organizations (id),
        id text NOT NULL,
        mode text,
        bundle_version text,
        last_sync_at timestamptz,
        last_ingest_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (org_id, id)
      )`);
    await runner.query(`
      CREATE TABLE sidecar_audit_ranges (
        org_id text NOT NULL,
        sidecar_id text NOT NULL,
        first_seq bigint NOT NULL,
        last_seq bigint NOT NULL,
        PRIMARY KEY (org_id, sidecar_id, first_seq),
        FOREIGN KEY (org_id, sidecar_id) REFERENCES sidecars (org_id, id),
        CHECK (first_seq >= 1 AND last_seq >= first_seq)
      )`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE sidecar_audit_ranges');
    await runner.query('DROP TABLE sidecars');
  }
}

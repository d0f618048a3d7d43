import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * How far retention has pruned each organization's chain: the last sequence number removed and
 * that entry's hash. Verification starts right after it, so retention is told apart from a
 * deletion, and the first kept entry is still checked against its predecessor.
 */
export class AuditPruning1763769600004 implements MigrationInterface {
  name = 'AuditPruning1763769600004';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`ALTER TABLE audit_chain_heads ADD COLUMN pruned_seq bigint NOT NULL DEFAULT 0`);
    await runner.query(`ALTER TABLE audit_chain_heads ADD COLUMN pruned_hash text NOT NULL DEFAULT '${'0'.repeat(64)}'`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('ALTER TABLE audit_chain_heads DROP COLUMN pruned_hash');
    await runner.query('ALTER TABLE audit_chain_heads DROP COLUMN pruned_seq');
  }
}

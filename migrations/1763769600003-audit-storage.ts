import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Cheaper audit writes: payload columns become `json`, which keeps the exact text written, so the
 * hash chain is computed over the very bytes stored (no re-serialisation, no key sorting); the
 * primary key and the per-agent index go, leaving two indexes per row: (org_id, ts, id) for
 * queries and paging, (org_id, seq) for chain verification. Ids are random 96-bit values.
 */
export class AuditStorage1763769600003 implements MigrationInterface {
  name = 'AuditStorage1763769600003';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query('ALTER TABLE audit_entries DROP CONSTRAINT IF EXISTS audit_entries_pkey');
    await runner.query('DROP INDEX IF EXISTS audit_entries_org_agent_ts');
    for (const column of ['delegation_chain', 'input', 'details']) {
      await runner.query(`ALTER TABLE audit_entries ALTER COLUMN ${column} TYPE json USING ${column}::json`);
    }
  }

  async down(runner: QueryRunner): Promise<void> {
    for (const column of ['delegation_chain', 'input', 'details']) {
      await runner.query(`ALTER TABLE audit_entries ALTER COLUMN ${column} TYPE jsonb USING ${column}::jsonb`);
    }
    await runner.query('CREATE INDEX audit_entries_org_agent_ts ON audit_entries (org_id, agent_id, ts DESC)');
    await runner.query('ALTER TABLE audit_entries ADD PRIMARY KEY (ts, id)');
  }
}

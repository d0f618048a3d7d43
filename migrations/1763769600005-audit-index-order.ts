import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The (org_id, ts, id) index in ascending order. New entries carry the newest timestamps, so
 * with a descending index every insert landed on the leftmost leaf of its organization's range,
 * where page splits are even (half-empty pages, about twice the index); ascending, they land on
 * the rightmost leaf, which PostgreSQL fills before splitting and reaches without descending the
 * tree. Newest-first queries read the same index backwards.
 */
export class AuditIndexOrder1763769600005 implements MigrationInterface {
  name = 'AuditIndexOrder1763769600005';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query('DROP INDEX IF EXISTS audit_entries_org_ts');
    await runner.query('CREATE INDEX audit_entries_org_ts ON audit_entries (org_id, ts, id)');
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP INDEX IF EXISTS audit_entries_org_ts');
    await runner.query('CREATE INDEX audit_entries_org_ts ON audit_entries (org_id, ts DESC, id DESC)');
  }
}

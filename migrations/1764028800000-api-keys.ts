import { MigrationInterface, QueryRunner } from 'typeorm';

/** Adapter API keys (stored hashed) and the idempotency ledger of adapter audit events. */
export class ApiKeys1764028800000 implements MigrationInterface {
  name = 'ApiKeys1764028800000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      CREATE TABLE api_keys (
        id text PRIMARY KEY,
        org_id text NOT NULL REFERENCES organizations (id),
        name text NOT NULL,
        key_hash text NOT NULL UNIQUE,
        key_prefix text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        revoked_at timestamptz
      )`);
    await runner.query(`CREATE INDEX api_keys_org ON api_keys (org_id, created_at)`);
    await runner.query(`
      CREATE TABLE adapter_audit_events (
        org_id text NOT NULL REFERENCES organizations (id),
        event_id text NOT NULL,
        audit_id text NOT NULL,
        received_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (org_id, event_id)
      )`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE adapter_audit_events');
    await runner.query('DROP TABLE api_keys');
  }
}

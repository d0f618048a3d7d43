import { MigrationInterface, QueryRunner } from 'typeorm';

/** Sidecar tokens (stored hashed): a sidecar's own credential, for the bundle fetch and the audit ingest only. */
export class SidecarTokens1764633600000 implements MigrationInterface {
  name = 'SidecarTokens1764633600000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      CREATE TABLE sidecar_tokens (
        id text PRIMARY KEY,
        org_id text NOT NULL REFERENCES organizations (id),
        name text NOT NULL,
        token_hash text NOT NULL UNIQUE,
        token_prefix text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        revoked_at timestamptz
      )`);
    await runner.query(`CREATE INDEX sidecar_tokens_org ON sidecar_tokens (org_id, created_at)`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE sidecar_tokens');
  }
}

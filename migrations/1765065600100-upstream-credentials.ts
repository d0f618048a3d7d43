import { MigrationInterface, QueryRunner } from 'typeorm';

/** Upstream credentials: values sealed with AES-256-GCM (CREDENTIALS_KEY_FILE), one active per organization and route. */
export class UpstreamCredentials1765065600100 implements MigrationInterface {
  name = 'UpstreamCredentials1765065600100';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      CREATE TABLE upstream_credentials (
        id text PRIMARY KEY,
        org_id text NOT NULL REFERENCES organizations (id),
        route_kind text NOT NULL CHECK (route_kind IN ('proxy', 'mcp')),
        route text NOT NULL,
        placement text NOT NULL CHECK (placement IN ('header', 'bearer', 'query')),
        placement_name text,
        sealed bytea,
        key_id text,
        for_edge boolean NOT NULL DEFAULT false,
        version integer NOT NULL DEFAULT 1,
        created_at timestamptz NOT NULL DEFAULT now(),
        rotated_at timestamptz,
        revoked_at timestamptz
      )`);
    await runner.query(`CREATE UNIQUE INDEX upstream_credentials_active_route ON upstream_credentials (org_id, route_kind, lower(route)) WHERE revoked_at IS NULL`);
    await runner.query(`CREATE INDEX upstream_credentials_org ON upstream_credentials (org_id, created_at)`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE upstream_credentials');
  }
}

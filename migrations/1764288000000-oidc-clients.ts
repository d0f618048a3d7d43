import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Managed-identity clients: which organization a bearer token of the configured identity
 * provider (OIDC_ISSUER) acts for, by its client id. A client id belongs to one organization.
 */
export class OidcClients1764288000000 implements MigrationInterface {
  name = 'OidcClients1764288000000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      CREATE TABLE oidc_clients (
        client_id text PRIMARY KEY,
        org_id text NOT NULL REFERENCES organizations (id),
        description text NOT NULL DEFAULT '',
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await runner.query(`CREATE INDEX oidc_clients_org ON oidc_clients (org_id, created_at)`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE oidc_clients');
  }
}

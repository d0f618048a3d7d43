import { MigrationInterface, QueryRunner } from 'typeorm';

/** A managed-identity client may stand for one agent of its organization: its tokens for an MCP server's URL act as that agent (docs/mcp.md, "Authorization"). */
export class OidcClientAgent1765065600000 implements MigrationInterface {
  name = 'OidcClientAgent1765065600000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query('ALTER TABLE oidc_clients ADD COLUMN agent_id text');
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('ALTER TABLE oidc_clients DROP COLUMN agent_id');
  }
}

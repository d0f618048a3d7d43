import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Pins of MCP tools (docs/mcp.md, "Tool pinning"), an organization's own: the definition first
 * met, and while the server offers another, that one and since when the tool is held.
 */
export class McpToolPins1764806400000 implements MigrationInterface {
  name = 'McpToolPins1764806400000';

  async up(runner: QueryRunner): Promise<void> {
    await runner.query(`
      CREATE TABLE mcp_tool_pins (
        org_id text NOT NULL REFERENCES organizations (id),
        server text NOT NULL,
        tool text NOT NULL,
        pinned_hash text NOT NULL,
        pinned_definition json NOT NULL,
        pinned_at timestamptz NOT NULL DEFAULT now(),
        current_hash text,
        current_definition json,
        held_since timestamptz,
        PRIMARY KEY (org_id, server, tool)
      )`);
  }

  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE mcp_tool_pins');
  }
}

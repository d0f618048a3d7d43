import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/**
 * A managed-identity client of the configured identity provider, registered by an
 * organization's admin: tokens naming this client id (`azp`, `appid` or `client_id`) act for
 * that organization.
 */
@Entity('oidc_clients')
export class OidcClient {
  @PrimaryColumn('text', { name: 'client_id' })
  clientId: string;

  @Column('text', { name: 'org_id' })
  orgId: string;

  @Column('text')
  description: string;

  /** The agent of the organization its tokens for an MCP server's URL act as (docs/mcp.md, "Authorization"); null: none. */
  @Column('text', { name: 'agent_id', nullable: true })
  agentId: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}

import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/** An upstream credential (docs/security.md "Upstream credentials"): its value stored encrypted, never shown. */
@Entity('upstream_credentials')
export class UpstreamCredential {
  @PrimaryColumn('text')
  id: string;

  @Column('text', { name: 'org_id' })
  orgId: string;

  /** `proxy` (route is a prefix under /proxy/, '' for all of it) or `mcp` (route is a server name). */
  @Column('text', { name: 'route_kind' })
  routeKind: 'proxy' | 'mcp';

  @Column('text')
  route: string;

  @Column('text')
  placement: 'header' | 'bearer' | 'query';

  /** The header or query parameter name; null for a bearer token. */
  @Column('text', { name: 'placement_name', nullable: true })
  placementName: string | null;

  /** AES-256-GCM of the value (credential-cipher.ts); null once revoked. */
  @Column('bytea', { nullable: true })
  sealed: Buffer | null;

  /** Which key sealed it (credentialKeyId). */
  @Column('text', { name: 'key_id', nullable: true })
  keyId: string | null;

  /** Given, sealed to each sidecar's key, in the organization's bundles. */
  @Column('boolean', { name: 'for_edge' })
  forEdge: boolean;

  /** 1 at creation, one more at each rotation. */
  @Column('integer')
  version: number;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column('timestamptz', { name: 'rotated_at', nullable: true })
  rotatedAt: Date | null;

  @Column('timestamptz', { name: 'revoked_at', nullable: true })
  revokedAt: Date | null;
}

import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/** A sidecar's credential (bundle fetch and audit ingest only), stored as the SHA-256 of the token: the token itself is shown once. */
@Entity('sidecar_tokens')
export class SidecarToken {
  @PrimaryColumn('text')
  id: string;

  @Column('text', { name: 'org_id' })
  orgId: string;

  @Column('text')
  name: string;

  @Column('text', { name: 'token_hash' })
  tokenHash: string;

  /** The token's first characters, to tell tokens apart in a list. */
  @Column('text', { name: 'token_prefix' })
  tokenPrefix: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column('timestamptz', { name: 'revoked_at', nullable: true })
  revokedAt: Date | null;
}

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

  /** Thumbprint of the sidecar keys the token is bound to (sidecarKeysThumbprint), from its first grant; null before. */
  @Column('text', { name: 'sidecar_keys', nullable: true })
  sidecarKeys: string | null;

  /** The sidecar that bound it. */
  @Column('text', { name: 'sidecar_id', nullable: true })
  sidecarId: string | null;

  @Column('timestamptz', { name: 'bound_at', nullable: true })
  boundAt: Date | null;

  @Column('timestamptz', { name: 'revoked_at', nullable: true })
  revokedAt: Date | null;
}

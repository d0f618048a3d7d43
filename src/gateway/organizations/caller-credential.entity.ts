import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/**
 * What a caller's secret opens: `api_key` the adapter endpoints (X-Api-Key), `sidecar_token` a
 * sidecar's few routes (bundle fetch, grant, audit ingest…), `admin_token` the admin API.
 */
export type CallerCredentialKind = 'api_key' | 'sidecar_token' | 'admin_token';

/**
 * A secret a caller presents to the gateway, stored as the SHA-256 of the secret: the secret
 * itself is shown once. Unlike `upstream_credentials` (what the gateway presents upstream), no
 * value is kept that could be used.
 */
@Entity('caller_credentials')
export class CallerCredential {
  @PrimaryColumn('text')
  id: string;

  @Column('text')
  kind: CallerCredentialKind;

  @Column('text', { name: 'org_id' })
  orgId: string;

  /** What an API key or sidecar token is for (shown in lists); null for admin tokens. */
  @Column('text', { nullable: true })
  name: string | null;

  @Column('text', { name: 'secret_hash' })
  secretHash: string;

  /** The secret's first characters, to tell API keys and sidecar tokens apart in a list; null for admin tokens. */
  @Column('text', { name: 'secret_prefix', nullable: true })
  secretPrefix: string | null;

  /** An admin token of org_default from ADMIN_TOKEN or generated at a start (replaced when it changes); false for the others. */
  @Column('boolean', { default: false })
  bootstrap: boolean;

  /** A sidecar token's binding: the thumbprint of the sidecar keys of its first grant (sidecarKeysThumbprint); null before. */
  @Column('text', { name: 'sidecar_keys', nullable: true })
  sidecarKeys: string | null;

  /** The sidecar that bound it. */
  @Column('text', { name: 'sidecar_id', nullable: true })
  sidecarId: string | null;

  @Column('timestamptz', { name: 'bound_at', nullable: true })
  boundAt: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column('timestamptz', { name: 'revoked_at', nullable: true })
  revokedAt: Date | null;
}

import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/** `bootstrap`: the ADMIN_TOKEN of org_default (replaced when it changes); `issued`: made by the CLI. */
export type AdminTokenKind = 'bootstrap' | 'issued';

/** An admin token, stored as the SHA-256 of the token: the token itself is shown once. */
@Entity('admin_tokens')
export class AdminToken {
  @PrimaryColumn('text')
  id: string;

  @Column('text', { name: 'org_id' })
  orgId: string;

  @Column('text', { name: 'token_hash' })
  tokenHash: string;

  @Column('text')
  kind: AdminTokenKind;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column('timestamptz', { name: 'revoked_at', nullable: true })
  revokedAt: Date | null;
}

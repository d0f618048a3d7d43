import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/** An adapter API key, stored as the SHA-256 of the key: the key itself is shown once. */
@Entity('api_keys')
export class ApiKey {
  @PrimaryColumn('text')
  id: string;

  @Column('text', { name: 'org_id' })
  orgId: string;

  @Column('text')
  name: string;

  @Column('text', { name: 'key_hash' })
  keyHash: string;

  /** The key's first characters, to tell keys apart in a list. */
  @Column('text', { name: 'key_prefix' })
  keyPrefix: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column('timestamptz', { name: 'revoked_at', nullable: true })
  revokedAt: Date | null;
}

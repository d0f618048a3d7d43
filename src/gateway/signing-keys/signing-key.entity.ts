import type { JWK } from 'jose';
import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/**
 * Public half of every signing key an instance has used, so all instances can verify tokens
 * signed by any of them during a key rotation, and /.well-known/jwks.json lists them.
 */
@Entity('signing_keys')
export class SigningKey {
  @PrimaryColumn('text')
  kid: string;

  @Column('jsonb', { name: 'public_jwk' })
  publicJwk: JWK;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column('timestamptz', { name: 'last_used_at' })
  lastUsedAt: Date;

  /** Latest expiry of a token it signed beyond what its last use covers (a longer `--ttl`); null: none. */
  @Column('timestamptz', { name: 'valid_until', nullable: true })
  validUntil: Date | null;
}

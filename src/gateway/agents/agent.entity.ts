import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

@Entity('agents')
export class Agent {
  @PrimaryColumn('text')
  id: string;

  @Column('text', { name: 'org_id' })
  orgId: string;

  @Column('text')
  name: string;

  /** Canonical tier: unverified, verified, trusted or privileged. */
  @Column('text', { name: 'trust_tier' })
  trustTier: string;

  @Column('text', { array: true })
  tags: string[];

  @Column('jsonb')
  metadata: Record<string, unknown>;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;

  @Column('timestamptz', { name: 'revoked_at', nullable: true })
  revokedAt: Date | null;
}

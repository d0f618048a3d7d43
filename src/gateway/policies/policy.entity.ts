import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import type { PolicyDefinition } from '../../core/policy-engine/types';

/** `file`: loaded from POLICIES_FILE (the file is authoritative for its names); `git`: from POLICIES_GIT_URL (edited only there); `api`: made through the admin API. */
export type PolicyOrigin = 'file' | 'git' | 'api';

@Entity('policies')
export class Policy {
  @PrimaryColumn('text', { name: 'org_id' })
  orgId: string;

  @PrimaryColumn('text')
  name: string;

  @Column('text', { nullable: true })
  description: string | null;

  /** The policy as submitted (YAML or JSON), kept verbatim. */
  @Column('text')
  source: string;

  @Column('jsonb')
  definition: PolicyDefinition;

  @Column('text')
  origin: PolicyOrigin;

  /** Organization policy version of this policy's last change. */
  @Column('bigint', { transformer: { to: (value: number) => value, from: (value: string) => Number(value) } })
  version: number;

  /** Evaluation order: creation order. */
  @Column('bigint', { transformer: { to: (value: number) => value, from: (value: string) => Number(value) } })
  position: number;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}

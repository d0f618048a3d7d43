import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';
import type { PolicyChangeKind } from './cluster-event';

/** One policy's change within an organization policy version (a version may change several). */
@Entity('policy_versions')
export class PolicyVersion {
  @PrimaryColumn('text', { name: 'org_id' })
  orgId: string;

  @PrimaryColumn('bigint', { transformer: { to: (value: number) => value, from: (value: string) => Number(value) } })
  version: number;

  @PrimaryColumn('text', { name: 'policy_name' })
  policyName: string;

  @Column('text')
  kind: PolicyChangeKind;

  /** Source after the change; null for deletions. */
  @Column('text', { nullable: true })
  source: string | null;

  /** Admin token id, `cli`, or `file`. */
  @Column('text')
  actor: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}

import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

/** A stored test file of an organization: every policy change must pass it unless forced (docs/policies.md "Tests in files"). */
@Entity('policy_tests')
export class PolicyTestFile {
  @PrimaryColumn('text', { name: 'org_id' })
  orgId: string;

  @PrimaryColumn('text')
  name: string;

  /** The test file as submitted (YAML or JSON), kept verbatim. */
  @Column('text')
  source: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}

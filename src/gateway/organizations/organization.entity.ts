import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import type { PlanId } from '../../core/config/plans';

@Entity('organizations')
export class Organization {
  @PrimaryColumn('text')
  id: string;

  @Column('text')
  name: string;

  @Column('text')
  plan: PlanId;

  @Column('text', { name: 'billing_email', nullable: true })
  billingEmail: string | null;

  @Column('text', { name: 'customer_id', nullable: true })
  customerId: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}

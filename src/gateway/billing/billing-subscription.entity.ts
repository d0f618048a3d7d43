import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import type { PlanId } from '../../core/config/plans';

/** A payment-provider subscription of an organization, as the last applied event left it. */
@Entity('billing_subscriptions')
export class BillingSubscription {
  /** The provider's subscription id. */
  @PrimaryColumn('text')
  id: string;

  @Column('text', { name: 'org_id' })
  orgId: string;

  @Column('text', { name: 'customer_id' })
  customerId: string;

  @Column('text')
  plan: PlanId;

  /** The provider's status (`active`, `canceled`, ...). */
  @Column('text')
  status: string;

  @Column('text', { name: 'price_id', nullable: true })
  priceId: string | null;

  /** `created` (Unix seconds) of the newest event applied: older events arriving later are ignored. */
  @Column('bigint', { name: 'last_event_created', transformer: { to: (value: number) => value, from: (value: string) => Number(value) } })
  lastEventCreated: number;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}

import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A webhook event already processed: its id is what makes a replay change nothing. */
@Entity('billing_events')
export class BillingEvent {
  /** The provider's event id. */
  @PrimaryColumn('text')
  id: string;

  @Column('text')
  type: string;

  @Column('text', { name: 'org_id', nullable: true })
  orgId: string | null;

  /** What processing did: `applied`, `stale` (older than what was applied), `ignored`. */
  @Column('text')
  outcome: string;

  @Column('timestamptz', { name: 'processed_at', default: () => 'now()' })
  processedAt: Date;
}

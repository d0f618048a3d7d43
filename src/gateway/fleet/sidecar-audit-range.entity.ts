import { Column, Entity, PrimaryColumn } from 'typeorm';

const bigint = { to: (value: number) => value, from: (value: string) => Number(value) };

/** A run of audit sequence numbers received from one sidecar, first to last inclusive. */
@Entity('sidecar_audit_ranges')
export class SidecarAuditRange {
  @PrimaryColumn('text', { name: 'org_id' })
  orgId: string;

  @PrimaryColumn('text', { name: 'sidecar_id' })
  sidecarId: string;

  @PrimaryColumn('bigint', { name: 'first_seq', transformer: bigint })
  firstSeq: number;

  @Column('bigint', { name: 'last_seq', transformer: bigint })
  lastSeq: number;
}

import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/** An edge sidecar that fetched its organization's bundle. */
@Entity('sidecars')
export class Sidecar {
  @PrimaryColumn('text', { name: 'org_id' })
  orgId: string;

  @PrimaryColumn('text')
  id: string;

  /** MODE the sidecar reported at its last fetch. */
  @Column('text', { nullable: true })
  mode: string | null;

  /** SIDECAR_LABELS it reported at its last fetch (X-Sidecar-Labels); null when it has none. */
  @Column('jsonb', { nullable: true })
  labels: Record<string, string> | null;

  /** Version of the bundle it held at its last fetch (after a 200: the one it was sent). */
  @Column('text', { name: 'bundle_version', nullable: true })
  bundleVersion: string | null;

  @Column('timestamptz', { name: 'last_sync_at', nullable: true })
  lastSyncAt: Date | null;

  @Column('timestamptz', { name: 'last_ingest_at', nullable: true })
  lastIngestAt: Date | null;

  /** Entries received under a number it had already sent with another id (written all the same). */
  @Column('bigint', { default: 0, transformer: { to: (value: number) => value, from: (value: string | number) => Number(value) } })
  renumbered: number;

  /** Highest audit sequence number it had used at its last fetch (X-Sidecar-Audit-Seq); null when it did not say. */
  @Column('bigint', { name: 'reported_seq', nullable: true, transformer: { to: (value: number | null) => value, from: (value: string | number | null) => (value === null ? null : Number(value)) } })
  reportedSeq: number | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}

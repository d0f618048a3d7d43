import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * One row of the audit trail, in a table partitioned by day on `ts` (see the audit migration).
 * Rows are written only by the AuditWriter, with raw SQL in batches; this entity serves reads.
 */
@Entity('audit_entries')
export class AuditEntry {
  @PrimaryColumn('text')
  id: string;

  @PrimaryColumn('timestamptz')
  ts: Date;

  @Column('text', { name: 'org_id' })
  orgId: string;

  @Column('bigint')
  seq: string;

  @Column('text')
  source: string;

  @Column('text')
  kind: string;

  @Column('text', { name: 'trace_id', nullable: true })
  traceId: string | null;

  @Column('text', { name: 'agent_id', nullable: true })
  agentId: string | null;

  @Column('text', { name: 'agent_name', nullable: true })
  agentName: string | null;

  @Column('text', { name: 'trust_tier', nullable: true })
  trustTier: string | null;

  @Column('text')
  action: string;

  @Column('text', { nullable: true })
  method: string | null;

  @Column('text', { nullable: true })
  path: string | null;

  @Column('text')
  decision: string;

  @Column('boolean')
  enforced: boolean;

  @Column('boolean', { name: 'rate_limited' })
  rateLimited: boolean;

  @Column('text', { name: 'policy_name', nullable: true })
  policyName: string | null;

  @Column('text', { nullable: true })
  rule: string | null;

  @Column('text', { nullable: true })
  reason: string | null;

  @Column('double precision', { name: 'decision_latency_ms', nullable: true })
  decisionLatencyMs: number | null;

  @Column('double precision', { name: 'latency_ms', nullable: true })
  latencyMs: number | null;

  @Column('integer', { nullable: true })
  status: number | null;

  @Column('integer', { name: 'upstream_status', nullable: true })
  upstreamStatus: number | null;

  @Column('jsonb', { name: 'delegation_chain', nullable: true })
  delegationChain: string[] | null;

  @Column('jsonb', { nullable: true })
  input: unknown;

  @Column('jsonb', { nullable: true })
  details: unknown;

  @Column('text', { name: 'prev_hash' })
  prevHash: string;

  @Column('text')
  hash: string;
}

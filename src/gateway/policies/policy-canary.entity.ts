import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { PolicyDefinition } from '../../core/policy-engine/types';

/** `running` until it ends: promoted (by hand or after its window), rolled back (by itself) or aborted (by hand). */
export type CanaryState = 'running' | 'promoted' | 'rolled_back' | 'aborted';

/** One cohort's decisions over a rollout, where the rolled-out policy applied. */
export interface CohortStats {
  decisions: number;
  denied: number;
  /** Held for a person (`require_approval`). */
  approvals: number;
  /** Answered 5xx, or forwarded and answered 5xx by the upstream. */
  errors: number;
}

/** Both cohorts, as last compared. */
export interface CanaryStats {
  canary: CohortStats;
  stable: CohortStats;
}

const bigint = { to: (value: number) => value, from: (value: string) => Number(value) };

/** A canary rollout of one policy (docs/policies.md "Canary rollouts"). */
@Entity('policy_canaries')
export class PolicyCanary {
  @PrimaryColumn('text')
  id: string;

  @Column('text', { name: 'org_id' })
  orgId: string;

  @Column('text', { name: 'policy_name' })
  policyName: string;

  /** The new version as submitted (YAML or JSON), kept verbatim. */
  @Column('text')
  source: string;

  @Column('jsonb')
  definition: PolicyDefinition;

  /** Percent of the agents (1-99) deciding on the new version; null for a rollout to labelled sidecars. */
  @Column('integer', { nullable: true })
  share: number | null;

  /** A rollout to labelled sidecars: the labels a sidecar must all carry for every agent there to decide on the new version; null for a share. */
  @Column('jsonb', { name: 'sidecar_labels', nullable: true })
  sidecarLabels: Record<string, string> | null;

  @Column('bigint', { name: 'window_ms', transformer: bigint })
  windowMs: number;

  /** Percentage points by which the canary's deny rate may exceed the rest's before it is rolled back. */
  @Column('double precision')
  margin: number;

  /** Decisions each cohort needs before the rates are compared ahead of the window's end. */
  @Column('integer', { name: 'min_decisions' })
  minDecisions: number;

  @Column('text')
  state: CanaryState;

  /** Admin token id, `cli`: who started it. */
  @Column('text', { name: 'started_by' })
  startedBy: string;

  @Column('timestamptz', { name: 'started_at' })
  startedAt: Date;

  /** Who ended it: an admin token id, `cli`, or `gateway` when the comparison did. */
  @Column('text', { name: 'ended_by', nullable: true })
  endedBy: string | null;

  @Column('timestamptz', { name: 'ended_at', nullable: true })
  endedAt: Date | null;

  /** Why it ended, in words. */
  @Column('text', { nullable: true })
  outcome: string | null;

  /** The cohorts' counts over the organization's audit entries up to `countedSeq`; final once it ended. */
  @Column('jsonb', { nullable: true })
  stats: CanaryStats | null;

  /** The place in the organization's audit chain (`seq`) the counts reach. */
  @Column('bigint', { name: 'counted_seq', transformer: bigint })
  countedSeq: number;
}

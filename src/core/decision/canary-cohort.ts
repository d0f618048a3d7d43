import { createHash } from 'node:crypto';
import { compilePolicies } from '../policy-engine/compile-policies';
import type { PolicySet } from '../policy-engine/policy-set';
import type { DecisionInput, PolicyDefinition } from '../policy-engine/types';

/**
 * A canary rollout as the decision path needs it (docs/policies.md "Canary rollouts"): a new
 * version of one policy, in force for a share of the organization's agents, or for every agent
 * at the sidecars whose labels it selects. The gateway reads it from its database, the sidecar
 * from its bundle; a share is drawn with `inCanary` on both, so an agent meets the same version
 * of the policy wherever it is decided.
 */
export interface CanaryRollout {
  /** `can_<hex>`: part of the cohort hash, so each rollout draws its own agents. */
  id: string;
  /** The policy rolled out. */
  policy: string;
  /** Percent of the agents (1-99) that get the new version; absent for a rollout to labelled sidecars. */
  share?: number;
  /** A rollout to labelled sidecars: the labels (name to value) a sidecar must all carry to decide on the new version. */
  sidecarLabels?: Readonly<Record<string, string>>;
  /**
   * The new version of the policy. Absent only in the bundle of a sidecar a rollout to labelled
   * sidecars does not select: it decides on the version in force, and records its decisions as
   * the stable cohort.
   */
  definition?: PolicyDefinition;
}

/** A rollout with its policy set compiled: the policies in force with the new version in place of the old. */
export interface LoadedCanary {
  id: string;
  policy: string;
  /** Percent of the agents deciding on the new version where it is loaded: for a rollout to labelled sidecars, 100 at a sidecar it selects and 0 elsewhere. */
  share: number;
  set: PolicySet;
}

/** Which version a decision was made on, recorded in its audit entry's `details.canary`. */
export interface CanaryDetails {
  rollout: string;
  policy: string;
  /** `canary`: the new version decided; `stable`: the version in force. */
  cohort: 'canary' | 'stable';
}

/** The policies with the rolled-out one replaced by its new version (or added last, when it is new). */
export function canaryDefinitions(definitions: readonly PolicyDefinition[], definition: PolicyDefinition): PolicyDefinition[] {
  const replaced = definitions.map((current) => (current.name === definition.name ? definition : current));
  return replaced.includes(definition) ? replaced : [...replaced, definition];
}

/**
 * Compiles a rollout against the organization's policies (throws PolicyLoadError as
 * compilePolicies does). `selectedHere`: this process is a sidecar the rollout to labelled
 * sidecars selects, so every agent decides on the new version; the gateway and the sidecars it
 * does not select decide on the version in force (the stable cohort).
 */
export function loadCanary(definitions: readonly PolicyDefinition[], rollout: CanaryRollout, namespace: string, selectedHere = false): LoadedCanary {
  const share = rollout.share ?? (selectedHere && rollout.definition !== undefined ? 100 : 0);
  const set = rollout.definition === undefined ? compilePolicies(definitions, { namespace }) : compilePolicies(canaryDefinitions(definitions, rollout.definition), { namespace });
  return { id: rollout.id, policy: rollout.policy, share, set };
}

/**
 * Whether an agent is in a rollout's canary cohort: the first 32 bits of SHA-256 over the
 * rollout id and the agent id, modulo 100, below the share. Stable for the agent over the whole
 * rollout, independent of instance and process, and drawn afresh for every rollout.
 */
export function inCanary(rolloutId: string, agentId: string, share: number): boolean {
  return createHash('sha256').update(`${rolloutId}\n${agentId}`).digest().readUInt32BE(0) % 100 < share;
}

/** The policy set an agent's decisions are made on, and the cohort it is in while a rollout runs. */
export function cohortSet(main: PolicySet, canary: LoadedCanary | undefined, agentId: string): { set: PolicySet; cohort?: 'canary' | 'stable' } {
  if (canary === undefined) return { set: main };
  return inCanary(canary.id, agentId, canary.share) ? { set: canary.set, cohort: 'canary' } : { set: main, cohort: 'stable' };
}

/**
 * The entry's `details.canary` when the rolled-out policy applies to the input in either of its
 * versions: the cohorts are compared on the traffic the policy governs, not on the rest.
 */
export function canaryDetails(main: PolicySet, canary: LoadedCanary | undefined, cohort: 'canary' | 'stable' | undefined, input: DecisionInput): CanaryDetails | undefined {
  if (canary === undefined || cohort === undefined) return undefined;
  const applies = canary.set.get(canary.policy)?.matches(input) === true || main.get(canary.policy)?.matches(input) === true;
  return applies ? { rollout: canary.id, policy: canary.policy, cohort } : undefined;
}

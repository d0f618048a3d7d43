import type { KeyObject } from 'node:crypto';
import type { AuditRecord } from '../audit-record/audit-record';
import type { PolicySet } from '../policy-engine/policy-set';
import type { AgentFacts, BudgetLedger, LabelGrant, OrgFacts, RateLimiter, SessionFacts } from '../policy-engine/types';
import type { SessionKey } from './session-store';
import type { LoadedCanary } from './canary-cohort';

/*
 * What the governed decision reads and writes, as small interfaces (Cerbos's PolicyLoader is the
 * model). The gateway binds them to PostgreSQL-backed services (PolicyRegistry, AgentDirectory,
 * KeyRing, UsageMeter, AuditWriter); the edge sidecar binds them to its signed bundle and its
 * write-ahead audit file. Lookups answer with promises, resolved at once on a cache hit.
 */

/** An organization's compiled policies and the policy version they reflect. */
export interface LoadedPolicies {
  set: PolicySet;
  version: number;
  /** The canary rollout running in the organization, if one is: its agents decide on `canary.set`. */
  canary?: LoadedCanary;
}

/** An agent as the decision path sees it: its current record, with decision facts prebuilt. */
export interface AgentSnapshot {
  id: string;
  orgId: string;
  name: string;
  trustTier: string;
  tags: readonly string[];
  revoked: boolean;
  facts: AgentFacts;
}

export interface PolicySource {
  /** The organization's compiled policies. */
  get(orgId: string): Promise<LoadedPolicies>;
}

export interface AgentSource {
  /** The agent's current record (revoked ones included), or null when it does not exist. */
  get(agentId: string): Promise<AgentSnapshot | null>;
}

export interface VerificationKeySource {
  /** The public key a token names by `kid`, if it is trusted. */
  verificationKey(kid: string | undefined): Promise<KeyObject | undefined>;
}

export interface UsageGate {
  /** Counts one policy check; false when the organization's monthly quota is used up. */
  tryConsume(orgId: string, nowMs: number): Promise<boolean>;
  /** The organization's plan and usage for `org.*` conditions, when the host knows them. */
  orgFacts?(orgId: string): OrgFacts | undefined;
}

export interface DecisionLog {
  /** Keeps the entry for writing; never blocks, never drops. */
  record(entry: AuditRecord): void;
  /** Undefined while the log has room, else a promise that resolves when it has (backpressure). */
  whenWritable(): Promise<void> | undefined;
  /**
   * Resolves once the entries recorded so far are durable, where an answer must wait for that
   * (the sidecar's write-ahead file); absent where recording is enough.
   */
  durable?(): Promise<void>;
}

/**
 * What sessions remember (docs/policies.md "Sessions"): in process (SessionStore) at the sidecar
 * and at a gateway without REDIS_URL, whose answers are synchronous, so a decision that reads
 * them waits for nothing; in Redis, shared by every gateway instance, when REDIS_URL is set.
 */
export interface SessionMemory {
  /** The session's facts, for a decision. */
  recall(key: SessionKey, nowMs: number): SessionFacts | Promise<SessionFacts>;
  /** Remembers a call let through and the labels its `label` rules added; answers the labels that were new. */
  remember(key: SessionKey, action: string, grants: readonly LabelGrant[] | undefined, nowMs: number): string[] | Promise<string[]>;
  /** Ends the labels of a session, or (no session id) of the agent; true when there were some. */
  clearLabels(orgId: string, agentId: string, sessionId: string | undefined, nowMs: number): boolean | Promise<boolean>;
}

/** How decisions are applied, and whom agent tokens must come from. */
export interface DecisionSettings {
  /** `audit`: denials are recorded, nothing is blocked. */
  mode: 'enforce' | 'audit';
  /** The `iss` every agent token must carry. */
  tokenIssuer: string;
}

export const POLICY_SOURCE = Symbol('PolicySource');
export const AGENT_SOURCE = Symbol('AgentSource');
export const VERIFICATION_KEYS = Symbol('VerificationKeySource');
export const USAGE_GATE = Symbol('UsageGate');
export const DECISION_LOG = Symbol('DecisionLog');
export const RATE_LIMITER = Symbol('RateLimiter');
export const DECISION_SETTINGS = Symbol('DecisionSettings');
export const SESSION_MEMORY = Symbol('SessionMemory');
/** The totals behind `budget(...)`: Redis on a gateway with REDIS_URL, the gateway's lease at the edge, else in process. */
export const BUDGET_LEDGER = Symbol('BudgetLedger');

export type { BudgetLedger, RateLimiter };

/** A snapshot from an agent's stored fields. */
export function agentSnapshot(agent: { id: string; orgId: string; name: string; trustTier: string; tags: readonly string[]; revoked: boolean }): AgentSnapshot {
  const tags = Object.freeze([...agent.tags]);
  return {
    id: agent.id,
    orgId: agent.orgId,
    name: agent.name,
    trustTier: agent.trustTier,
    tags,
    revoked: agent.revoked,
    facts: Object.freeze({ id: agent.id, name: agent.name, trust_tier: agent.trustTier, tags, org: agent.orgId }),
  };
}

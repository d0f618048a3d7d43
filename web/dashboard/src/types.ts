/**
 * The answers of the gateway's admin and analytics APIs that the dashboard reads, as the
 * OpenAPI document (`/docs-json`) describes them; only the fields the pages show.
 */

export const PERIODS = ['24h', '7d', '30d'] as const;
export type Period = (typeof PERIODS)[number];

export const TIERS = ['unverified', 'verified', 'trusted', 'privileged'] as const;
export type Tier = (typeof TIERS)[number];

export interface Organization {
  id: string;
  name: string;
  plan: string;
}

export interface Overview {
  period: Period;
  totalRequests: number;
  enforcementRate: number;
  activeAgents: number;
  avgLatencyMs: number;
  trends: { totalRequests: number; enforcementRate: number; activeAgents: number; avgLatencyMs: number };
}

export interface Timeseries {
  bucket: 'hour' | 'day';
  data: Array<{ time: string; allowed: number; denied: number }>;
}

export interface AgentStat {
  id: string;
  name: string | null;
  trustTier: string | null;
  requests: number;
  allowed: number;
  denied: number;
  avgLatencyMs: number;
  lastActive: string;
}

/** GET /admin/analytics/shadow: what a shadow policy (mode: shadow) would have done. */
export interface ShadowPolicyStat {
  name: string;
  evaluated: number;
  wouldDeny: number;
  wouldDenyRate: number;
  wouldFlip: number;
  topAgents: Array<{ key: string; name?: string; count: number }>;
  topActions: Array<{ key: string; count: number }>;
}

/** One cohort of a canary rollout (GET /admin/canaries): the decisions the rolled-out policy applied to. */
export interface CanaryCohort {
  decisions: number;
  denied: number;
  denyRate: number;
  approvals: number;
  approvalRate: number;
  errors: number;
  errorRate: number;
}

/** GET /admin/policy-git: the organization's git source and where it stands (docs/policies.md "Policies from git"). */
export interface PolicyGitSource {
  url: string;
  branch: string;
  path: string;
  pollMs: number;
  signed: boolean;
  updatedBy: string;
  updatedAt: string;
  commit: string | null;
  appliedAt: string | null;
  checkedAt: string | null;
  error: { commit: string | null; message: string; at: string } | null;
}

/** GET /admin/canaries: a canary rollout (docs/policies.md "Canary rollouts"). */
export interface Canary {
  id: string;
  policy: string;
  state: 'running' | 'promoted' | 'rolled_back' | 'aborted';
  /** Percent of the agents; null for a rollout to labelled sidecars. */
  share: number | null;
  /** The labels of the sidecars whose agents decide on the new version; null for a share. */
  sidecarLabels: Record<string, string> | null;
  margin: number;
  minDecisions: number;
  startedAt: string;
  endsAt: string;
  endedAt: string | null;
  outcome: string | null;
  canary: CanaryCohort;
  stable: CanaryCohort;
}

export interface PolicyStat {
  name: string;
  triggered: number;
  allowRate: number;
  denyRate: number;
  topAction: string;
}

export interface Delegations {
  totalChains: number;
  avgDepth: number;
  blockedChains: number;
  topPairs: Array<{ fromAgent: string; toAgent: string; count: number }>;
}

export interface TrustDistribution {
  tiers: Array<{ tier: string; agentCount: number; requestCount: number; pct: number }>;
}

export interface LatencyHeatmap {
  cells: Array<{ dayOfWeek: number; hourOfDay: number; avgLatencyMs: number; count: number }>;
}

export interface Agent {
  id: string;
  name: string;
  trustTier: Tier;
  tags: string[];
  status: 'active' | 'revoked';
  createdAt: string;
  updatedAt: string;
  revokedAt: string | null;
}

export interface CreatedAgent extends Agent {
  token: string;
  tokenExpiresAt: string;
}

export interface Trust {
  agentId: string;
  score: number;
  window: string;
  factors: {
    tier: { value: string; points: number };
    age: { days: number; points: number };
    denyRatio: { decisions: number; denied: number; ratio: number; points: number };
    rateLimitHits: { count: number; points: number };
    revoked: { value: boolean };
  };
  computedAt: string;
}

export const AUDIT_SOURCES = ['proxy', 'pdp', 'check', 'sidecar', 'mcp', 'admin'] as const;

export interface AuditEntry {
  id: string;
  timestamp: string;
  seq: number;
  source: string;
  kind: 'decision' | 'admin';
  traceId: string | null;
  agentId: string | null;
  agentName: string | null;
  trustTier: string | null;
  action: string;
  method: string | null;
  path: string | null;
  decision: 'allow' | 'deny';
  enforced: boolean;
  rateLimited: boolean;
  policyName: string | null;
  rule: string | null;
  reason: string | null;
  latencyMs: number | null;
  decisionLatencyMs: number | null;
  status: number | null;
  upstreamStatus: number | null;
  delegationChain: string[] | null;
  input: Record<string, unknown> | null;
  details: Record<string, unknown> | null;
}

export interface AuditPage {
  entries: AuditEntry[];
  nextCursor: string | null;
}

export interface AuditVerification {
  ok: boolean;
  checked: number;
  firstSeq: number | null;
  lastSeq: number | null;
  brokenAt: { seq: number; id: string | null; problem: string; message: string } | null;
}

export interface PolicyRule {
  name?: string;
  condition: string;
  action: 'allow' | 'deny' | 'alert' | string;
  reason: string;
}

export interface Policy {
  name: string;
  description?: string;
  match?: { plugin?: string; function?: string; action?: string };
  default?: 'allow' | 'deny';
  rules: PolicyRule[];
  origin: 'api' | 'file' | 'git';
  mode?: 'enforce' | 'shadow';
  version: number;
  createdAt: string;
  updatedAt: string;
}

export interface PolicyDetail extends Policy {
  source: string;
}

export interface PolicyList {
  version: number;
  policies: Policy[];
}

export interface PolicyVersion {
  version: number;
  policy: string;
  kind: string;
  actor: string;
  createdAt: string;
  source: string | null;
}

export interface PolicyError {
  file?: string;
  policy?: string;
  rule?: string;
  line: number;
  column: number;
  message: string;
}

export interface ValidationResult {
  valid: boolean;
  policies: string[];
  errors: PolicyError[];
  errorCount: number;
}

export interface FiredAlert {
  policy: string;
  rule: string;
  reason: string;
}

export interface Decision {
  decision: 'allow' | 'deny';
  policy: string | null;
  rule: string | null;
  reason: string | null;
  rateLimit?: { limit: string; retryAfterSeconds: number } | null;
  alerts?: FiredAlert[];
}

/** One policy as a simulation tried it, with each of its rules (docs/policies.md, "Versions, simulation, backtests"). */
export interface PolicyTrace {
  policy: string;
  applicable: boolean;
  rules: Array<{ rule: string; action: string; result: boolean | 'not-reached'; rateLimit?: unknown }>;
}

export interface Simulation extends Decision {
  enforced: boolean;
  policyVersion: number | null;
  trace: PolicyTrace[];
}

export interface Backtest {
  from: string;
  to: string;
  examined: number;
  skipped: number;
  unchanged: number;
  allowToDeny: number;
  denyToAllow: number;
  byPolicy: Array<{ policy: string; allowToDeny: number; denyToAllow: number }>;
  flips: Array<{ id: string; timestamp: string; agentId: string | null; action: string; before: Decision; after: Decision }>;
  truncated: boolean;
}

export const APPROVAL_STATUSES = ['pending', 'approved', 'rejected', 'expired', 'used'] as const;
export type ApprovalStatus = (typeof APPROVAL_STATUSES)[number];

export interface Approval {
  id: string;
  status: ApprovalStatus;
  agentId: string;
  agentName: string | null;
  source: string;
  action: string;
  method: string | null;
  path: string | null;
  policy: string;
  rule: string | null;
  reason: string | null;
  approvers: string[];
  createdAt: string;
  expiresAt: string;
  decidedBy: string | null;
  decidedAt: string | null;
  comment: string | null;
}

export interface ApprovalPage {
  approvals: Approval[];
  nextCursor: string | null;
}

export interface ToolDefinition {
  name: string;
  description?: string;
  inputSchema?: Record<string, unknown>;
}

export interface ToolPin {
  server: string;
  tool: string;
  held: boolean;
  pinnedAt: string;
  heldSince: string | null;
  pinned: ToolDefinition;
  current: ToolDefinition | null;
  changes: string[];
  diff: Record<string, { pinned: unknown; current: unknown }>;
}

export interface Sidecar {
  id: string;
  mode: 'enforce' | 'audit' | null;
  bundleVersion: string | null;
  lastSync: string | null;
  lastIngest: string | null;
  lastSeq: number;
  received: number;
  gaps: Array<{ first: number; last: number; message: string }>;
  unforwarded: number;
  renumbered: number;
}

/** GET /admin/sessions/timeline: one session of an agent, its calls oldest first (docs/policies.md "Seen"). */
export interface SessionTimeline {
  agentId: string;
  sessionId: string;
  labels: string[];
  agentLabels: string[];
  calls: Array<{
    id: string;
    timestamp: string;
    source: string;
    action: string;
    decision: 'allow' | 'deny';
    policy: string | null;
    rule: string | null;
    reason: string | null;
    labels: string[];
    agentLabels: string[];
    labelsAdded: string[];
    reserved: number | null;
    budget: string | null;
  }>;
  truncated: boolean;
}

export const CREDENTIAL_TYPES = ['header', 'bearer', 'query'] as const;
export type CredentialType = (typeof CREDENTIAL_TYPES)[number];

/** GET /admin/credentials: an upstream credential, everything but its value (which no answer holds). */
export interface Credential {
  id: string;
  route: string | null;
  mcpServer: string | null;
  type: CredentialType;
  name: string | null;
  edge: boolean;
  version: number;
  createdAt: string;
  rotatedAt: string | null;
  revokedAt: string | null;
}

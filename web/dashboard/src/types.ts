import type { components } from './api-schema';

/**
 * The answers of the gateway's admin and analytics APIs that the dashboard reads, by the names
 * the pages use: the schemas of the gateway's OpenAPI document (`/docs-json`), generated into
 * api-schema.ts by scripts/dashboard-api-types.mjs at build time, never copied by hand.
 */
type Schemas = components['schemas'];

export const PERIODS = ['24h', '7d', '30d'] as const;
export type Period = (typeof PERIODS)[number];
export const TIERS = ['unverified', 'verified', 'trusted', 'privileged'] as const;
export type Tier = (typeof TIERS)[number];
export type Organization = Schemas['OrganizationView'];
export type Overview = Schemas['OverviewView'];
export type Timeseries = Schemas['TimeseriesView'];
export type AgentStat = Schemas['AgentStat'];
/** GET /admin/analytics/shadow: what a shadow policy (mode: shadow) would have done. */
export type ShadowPolicyStat = Schemas['ShadowPolicyStat'];
/** One cohort of a canary rollout (GET /admin/canaries): the decisions the rolled-out policy applied to. */
export type CanaryCohort = Schemas['CohortView'];
/** GET /admin/policy-git: the organization's git source and where it stands (docs/policies.md "Policies from git"). */
export type PolicyGitSource = Schemas['PolicyGitSourceView'];
/** GET /admin/canaries: a canary rollout (docs/policies.md "Canary rollouts"). */
export type Canary = Schemas['CanaryView'];
export type PolicyStat = Schemas['PolicyStat'];
export type Delegations = Schemas['DelegationsView'];
export type TrustDistribution = Schemas['TrustDistributionView'];
export type LatencyHeatmap = Schemas['LatencyHeatmapView'];
export type Agent = Schemas['AgentView'];
export type CreatedAgent = Schemas['CreatedAgentView'];
export type Trust = Schemas['TrustView'];
export const AUDIT_SOURCES = ['proxy', 'pdp', 'check', 'sidecar', 'mcp', 'admin'] as const;
export type AuditEntry = Schemas['AuditEntryView'];
export type AuditPage = Schemas['AuditPage'];
export type AuditVerification = Schemas['AuditVerification'];
export type PolicyRule = Schemas['PolicyRuleView'];
export type Policy = Schemas['PolicyView'];
export type PolicyDetail = Schemas['PolicyDetailView'];
export type PolicyList = Schemas['PolicyListView'];
export type PolicyVersion = Schemas['PolicyVersionView'];
export type PolicyError = Schemas['PolicyErrorView'];
export type ValidationResult = Schemas['ValidationResultView'];
export type FiredAlert = Schemas['FiredAlertView'];
export type Decision = Schemas['DecisionView'];
export type Simulation = Schemas['SimulationView'];
export type Backtest = Schemas['BacktestReportView'];
export const APPROVAL_STATUSES = ['pending', 'approved', 'rejected', 'expired', 'used'] as const;
export type ApprovalStatus = (typeof APPROVAL_STATUSES)[number];
export type Approval = Schemas['ApprovalView'];
export type ApprovalPage = Schemas['ApprovalListView'];
export type ToolDefinition = Schemas['ToolDefinitionView'];
export type ToolPin = Schemas['ToolPinView'];
export type Sidecar = Schemas['SidecarView'];
/** GET /admin/sessions/timeline: one session of an agent, its calls oldest first (docs/policies.md "Seen"). */
export type SessionTimeline = Schemas['SessionTimelineView'];
export const CREDENTIAL_TYPES = ['header', 'bearer', 'query'] as const;
export type CredentialType = (typeof CREDENTIAL_TYPES)[number];
/** GET /admin/credentials: an upstream credential, everything but its value (which no answer holds). */
export type Credential = Schemas['CredentialView'];

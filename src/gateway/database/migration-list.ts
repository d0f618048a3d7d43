import { Foundation1763769600000 } from '../../../migrations/1763769600000-foundation';
import { AuditTrail1763769600001 } from '../../../migrations/1763769600001-audit-trail';
import { Policies1763769600002 } from '../../../migrations/1763769600002-policies';
import { AuditStorage1763769600003 } from '../../../migrations/1763769600003-audit-storage';
import { AuditPruning1763769600004 } from '../../../migrations/1763769600004-audit-pruning';
import { AuditIndexOrder1763769600005 } from '../../../migrations/1763769600005-audit-index-order';
import { ApiKeys1764028800000 } from '../../../migrations/1764028800000-api-keys';
import { Billing1763856000000 } from '../../../migrations/1763856000000-billing';
import { Sidecars1764201600000 } from '../../../migrations/1764201600000-sidecars';
import { AnalyticsRollups1763942400000 } from '../../../migrations/1763942400000-analytics-rollups';
import { OidcClients1764288000000 } from '../../../migrations/1764288000000-oidc-clients';
import { SidecarRenumbered1764374400500 } from '../../../migrations/1764374400500-sidecar-renumbered';
import { SidecarReportedSeq1764460800000 } from '../../../migrations/1764460800000-sidecar-reported-seq';
import { SigningKeyValidUntil1764547200000 } from '../../../migrations/1764547200000-signing-key-valid-until';
import { SidecarTokens1764633600000 } from '../../../migrations/1764633600000-sidecar-tokens';
import { DeploymentSettings1764720000000 } from '../../../migrations/1764720000000-deployment-settings';
import { McpToolPins1764806400000 } from '../../../migrations/1764806400000-mcp-tool-pins';
import { Approvals1764892800000 } from '../../../migrations/1764892800000-approvals';
import { ApprovalBinding1764979200041 } from '../../../migrations/1764979200041-approval-binding';
import { PolicyTests1764979200046 } from '../../../migrations/1764979200046-policy-tests';
import { OidcClientAgent1765065600000 } from '../../../migrations/1765065600000-oidc-client-agent';
import { UpstreamCredentials1765065600100 } from '../../../migrations/1765065600100-upstream-credentials';
import { PolicyCanaries1765152000000 } from '../../../migrations/1765152000000-policy-canaries';
import { ApprovalPaging1765152000041 } from '../../../migrations/1765152000041-approval-paging';
import { SidecarKeys1765152000100 } from '../../../migrations/1765152000100-sidecar-keys';
import { PolicyCanaryCounted1765152000200 } from '../../../migrations/1765152000200-policy-canary-counted';
import { CanarySidecarLabels1765238400460 } from '../../../migrations/1765238400460-canary-sidecar-labels';
import { PolicyGitSources1765238400470 } from '../../../migrations/1765238400470-policy-git-sources';
import { CallerCredentials1765238400500 } from '../../../migrations/1765238400500-caller-credentials';

/** Every migration, oldest first. Listed explicitly so ts-jest and dist/ load the same set. */
export const MIGRATIONS = [
  Foundation1763769600000,
  AuditTrail1763769600001,
  Policies1763769600002,
  AuditStorage1763769600003,
  AuditPruning1763769600004,
  AuditIndexOrder1763769600005,
  Billing1763856000000,
  AnalyticsRollups1763942400000,
  ApiKeys1764028800000,
  Sidecars1764201600000,
  OidcClients1764288000000,
  SidecarRenumbered1764374400500,
  SidecarReportedSeq1764460800000,
  SigningKeyValidUntil1764547200000,
  SidecarTokens1764633600000,
  DeploymentSettings1764720000000,
  McpToolPins1764806400000,
  Approvals1764892800000,
  ApprovalBinding1764979200041,
  PolicyTests1764979200046,
  OidcClientAgent1765065600000,
  UpstreamCredentials1765065600100,
  PolicyCanaries1765152000000,
  ApprovalPaging1765152000041,
  SidecarKeys1765152000100,
  PolicyCanaryCounted1765152000200,
  CanarySidecarLabels1765238400460,
  PolicyGitSources1765238400470,
  CallerCredentials1765238400500,
];

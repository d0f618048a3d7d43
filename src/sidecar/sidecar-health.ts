import { Injectable } from '@nestjs/common';
import { AppError } from '../core/common/app-error';
import { ErrorCode } from '../core/common/error-code';
import { BearerToken } from '../core/telemetry/bearer-token';
import { SidecarConfig } from './sidecar-config';
import { AuditForwarder } from './audit-forwarder';
import { AuditWal, WalState } from './audit-wal';
import { BundleStore } from './bundle-store';
import { BundleSync } from './bundle-sync';
import { EdgeBudgetLedger } from './edge-budget-ledger';
import { GatewayLink } from './gateway-link';
import { EdgeGrants, EdgeGrantState } from './edge-grants';

/** The fields of GET /health anyone may read (docs/sidecar.md "Health"): the service's own status, nothing of its id, errors or audit buffer. */
export const PUBLIC_HEALTH_FIELDS = ['status', 'mode', 'bundleVersion', 'bundleAge', 'lastSync', 'lastSyncSuccess', 'gatewayReachable', 'cachedPolicies', 'cachedAgents', 'uptimeSeconds'] as const;

export type PublicHealthReport = Pick<SidecarHealthReport, (typeof PUBLIC_HEALTH_FIELDS)[number]>;

/** GET /health of the sidecar with METRICS_TOKEN (docs/sidecar.md), plus why it fails closed and its audit buffer. */
export interface SidecarHealthReport {
  /** `healthy`; `fail_closed` when no valid bundle is in force (everything is denied, HTTP 503). */
  /** `degraded`: deciding, but audit entries cannot be written (see `degradedReason`); their answers are 503s. */
  status: 'healthy' | 'degraded' | 'fail_closed';
  mode: 'enforce' | 'audit';
  sidecarId: string;
  bundleVersion: string | null;
  /** Time since the bundle in force was made (its version), e.g. `3m12s`; null without one. */
  bundleAge: string | null;
  /** Time of the last sync attempt. */
  lastSync: string | null;
  lastSyncSuccess: boolean;
  lastSuccessfulSync: string | null;
  lastSyncError: string | null;
  gatewayReachable: boolean;
  cachedPolicies: number;
  cachedAgents: number;
  uptimeSeconds: number;
  /** Why the sidecar is degraded, when `status` is `degraded`. */
  degradedReason: string | null;
  /** Why every request is denied, when `status` is `fail_closed`. */
  failClosedReason: string | null;
  keyPinning: 'configured' | 'first-use' | 'none';
  audit: WalState & { lastForward: string | null; forwardError: string | null };
  /** The gateway's grant: when the certificate of its decision-token key expires, the edge credentials in force (ids only), why no new grant came. */
  edgeGrant: EdgeGrantState;
  /** Budget leases held (one per budget being spent here) and those waiting for the gateway to take them back (docs/sidecar.md "Budgets"). */
  budgetLeases: { held: number; returning: number };
}

const STARTED_MS = Date.now();

@Injectable()
export class SidecarHealth {
  private readonly detailToken: BearerToken;

  constructor(
    private readonly config: SidecarConfig,
    private readonly store: BundleStore,
    private readonly sync: BundleSync,
    private readonly link: GatewayLink,
    private readonly wal: AuditWal,
    private readonly forwarder: AuditForwarder,
    private readonly grants: EdgeGrants,
    private readonly budgets: EdgeBudgetLedger,
  ) {
    this.detailToken = new BearerToken(config.telemetry.metricsToken);
  }

  /**
   * What GET /health shows the caller: the public fields, or the whole report to the bearer of
   * METRICS_TOKEN (the sidecar id, sync errors, why it fails closed, its audit buffer name the
   * deployment and its state: not for every agent that can reach the port). A bearer token that
   * is not METRICS_TOKEN is refused (401), never answered as if it were.
   */
  reportFor(authorization: string | undefined): SidecarHealthReport | PublicHealthReport {
    const report = this.report();
    if (authorization !== undefined && /^bearer /i.test(authorization)) {
      if (this.detailToken.matches(authorization)) return report;
      throw new AppError(ErrorCode.Unauthorized, this.detailToken.configured ? 'Health details need METRICS_TOKEN as a bearer token' : 'Health details are served only with METRICS_TOKEN set');
    }
    const visible: Record<string, unknown> = {};
    for (const field of PUBLIC_HEALTH_FIELDS) visible[field] = report[field];
    return visible as PublicHealthReport;
  }

  report(nowMs = Date.now()): SidecarHealthReport {
    const bundle = this.store.bundle;
    const failure = this.store.failure;
    const audit = this.wal.state();
    const degraded = audit.writeError === null ? null : `audit entries cannot be written to CACHE_DIR: ${audit.writeError}`;
    return {
      status: failure !== null ? 'fail_closed' : degraded !== null ? 'degraded' : 'healthy',
      mode: this.config.mode,
      sidecarId: this.link.sidecarId,
      bundleVersion: bundle?.version ?? null,
      bundleAge: bundle ? durationText(nowMs - Date.parse(bundle.version)) : null,
      lastSync: iso(this.sync.lastSyncMs),
      lastSyncSuccess: this.sync.lastSyncSuccess,
      lastSuccessfulSync: iso(this.sync.lastSuccessMs),
      lastSyncError: this.sync.lastError,
      gatewayReachable: this.link.reachable,
      cachedPolicies: bundle?.policies.length ?? 0,
      cachedAgents: bundle?.agents.length ?? 0,
      uptimeSeconds: Math.floor((nowMs - STARTED_MS) / 1000),
      degradedReason: degraded,
      failClosedReason: failure,
      keyPinning: this.store.keyPinning,
      audit: { ...audit, lastForward: iso(this.forwarder.lastForwardMs), forwardError: this.forwarder.lastError },
      edgeGrant: this.grants.state(),
      budgetLeases: this.budgets.state(),
    };
  }
}

function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

/** `1d2h3m4s`, leading zero units left out; `0s` for less than a second. */
export function durationText(ms: number): string {
  let seconds = Math.max(0, Math.floor(ms / 1000));
  const parts: string[] = [];
  for (const [unit, size] of [['d', 86_400], ['h', 3600], ['m', 60]] as const) {
    if (seconds >= size || parts.length > 0) parts.push(`${Math.floor(seconds / size)}${unit}`);
    seconds %= size;
  }
  parts.push(`${seconds}s`);
  return parts.join('');
}

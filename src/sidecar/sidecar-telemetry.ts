import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import type { Logger } from 'pino';
import { DecisionEvents } from '../core/decision/decision-events';
import { LOGGER } from '../core/logging/logging.module';
import { Telemetry } from '../core/telemetry/telemetry';
import type { Sample } from '../core/telemetry/service-metrics';
import { AuditForwarder } from './audit-forwarder';
import { AuditWal } from './audit-wal';
import { BundleStore } from './bundle-store';
import { BundleSync } from './bundle-sync';
import { GatewayLink } from './gateway-link';

/**
 * The sidecar's side of its telemetry (src/core/telemetry): the decision metrics and spans on its
 * DecisionEvents, and the metrics only the sidecar has (docs/observability.md "Metrics"):
 * - `agentgov_bundle_valid`, `agentgov_bundle_age_seconds`, `agentgov_bundle_syncs_total{result}`;
 * - `agentgov_gateway_reachable`;
 * - `agentgov_audit_pending_entries`, `agentgov_audit_oldest_pending_seconds`: entries in the
 *   write-ahead log the gateway has not acknowledged, and how old the oldest is;
 * - `agentgov_audit_forward_duration_seconds`, `agentgov_audit_forward_failures_total`,
 *   `agentgov_audit_entries_forwarded_total`, `agentgov_audit_dropped_entries_total`.
 */
@Injectable()
export class SidecarTelemetry implements OnModuleInit, OnApplicationBootstrap, OnApplicationShutdown {
  constructor(
    private readonly telemetry: Telemetry,
    private readonly events: DecisionEvents,
    private readonly store: BundleStore,
    private readonly sync: BundleSync,
    private readonly link: GatewayLink,
    private readonly wal: AuditWal,
    private readonly forwarder: AuditForwarder,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async onModuleInit(): Promise<void> {
    const { metrics } = this.telemetry;
    metrics.gauge('agentgov_bundle_valid', '1 while a valid policy bundle is in force, 0 while every decision is refused (fail closed)', () => (this.store.failure === null ? 1 : 0));
    metrics.gauge('agentgov_bundle_age_seconds', 'Age of the bundle in force (since the change it reflects); absent without one', () => {
      const version = this.store.bundle?.version;
      return version === undefined ? null : Math.max(0, (Date.now() - Date.parse(version)) / 1000);
    });
    metrics.counter('agentgov_bundle_syncs_total', 'Bundle fetches, by result: applied (a newer bundle put in force), unchanged, failed', () =>
      Object.entries(this.sync.syncs).map(([result, count]): Sample => [{ result }, count]),
    );
    metrics.gauge('agentgov_gateway_reachable', '1 when the last call to the gateway got an answer', () => (this.link.reachable ? 1 : 0));
    metrics.gauge('agentgov_audit_pending_entries', 'Audit entries the gateway has not acknowledged yet (in the write-ahead log)', () => this.wal.state().pendingEntries);
    metrics.gauge('agentgov_audit_oldest_pending_seconds', 'How long ago the oldest entry the gateway has not acknowledged was decided; 0 when none waits', () => this.oldestPendingSeconds());
    metrics.histogram('agentgov_audit_forward_duration_seconds', 'Audit batches sent to the gateway, until its answer', () => [[{}, this.forwarder.forwardSeconds]]);
    metrics.counter('agentgov_audit_forward_failures_total', 'Audit batches the gateway did not take (unreachable or refused; each is sent again)', () => this.forwarder.forwardFailures);
    metrics.counter('agentgov_audit_entries_forwarded_total', 'Audit entries the gateway acknowledged', () => this.forwarder.forwardedEntries);
    metrics.counter('agentgov_audit_dropped_entries_total', 'Audit entries not kept: the write-ahead log full (AUDIT_BUFFER_MAX_BYTES) or its writes failing', () => this.wal.state().dropped);
    await this.telemetry.observe(this.events);
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.telemetry.listen();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.telemetry.close();
  }

  private oldestPendingSeconds(): number {
    try {
      const ts = this.wal.oldestPendingTs();
      return ts === null ? 0 : Math.max(0, (Date.now() - ts) / 1000);
    } catch (error) {
      this.logger.warn({ err: error }, 'oldest audit entry not read for the metrics');
      return 0;
    }
  }
}

import { Injectable, OnApplicationBootstrap, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { AlertService } from '../alerts/alert.service';
import { AuditWriter } from '../audit/audit-writer';
import { DecisionEvents } from '../../core/decision/decision-events';
import type { Sample } from '../../core/telemetry/service-metrics';
import { Telemetry } from '../../core/telemetry/telemetry';

/**
 * The gateway's side of its telemetry (src/core/telemetry): the decision metrics and spans on its
 * DecisionEvents, and the metrics only the gateway has (docs/observability.md "Metrics"):
 * - `agentgov_audit_pending_entries`, `agentgov_audit_oldest_pending_seconds`: the audit queue
 *   and how long its oldest entry has waited (what /health compares with AUDIT_LAG_MAX_MS);
 * - `agentgov_audit_write_duration_seconds`, `agentgov_audit_write_failures_total`,
 *   `agentgov_audit_entries_written_total`: batch writes of the trail;
 * - `agentgov_alert_deliveries_total{provider, result}`, `agentgov_alerts_dropped_total{reason}`.
 * All are read when scraped; none costs the request path anything.
 */
@Injectable()
export class GatewayTelemetry implements OnModuleInit, OnApplicationBootstrap, OnApplicationShutdown {
  constructor(
    private readonly telemetry: Telemetry,
    private readonly events: DecisionEvents,
    private readonly audit: AuditWriter,
    private readonly alerts: AlertService,
  ) {}

  async onModuleInit(): Promise<void> {
    const { metrics } = this.telemetry;
    metrics.gauge('agentgov_audit_pending_entries', 'Audit entries answered but not yet written to the trail (lost by a kill -9)', () => this.audit.lag().pending);
    metrics.gauge('agentgov_audit_oldest_pending_seconds', 'How long the oldest audit entry not yet written has waited; 0 when none waits', () => (this.audit.lag().oldestUnwrittenMs ?? 0) / 1000);
    metrics.histogram('agentgov_audit_write_duration_seconds', 'Batch writes of the audit trail (one COPY, or one INSERT on the embedded database), failed ones included', () => [[{}, this.audit.writeSeconds]]);
    metrics.counter('agentgov_audit_write_failures_total', 'Batch writes of the audit trail that failed (each is retried)', () => this.audit.writeFailures);
    metrics.counter('agentgov_audit_entries_written_total', 'Audit entries written to the trail', () => this.audit.writtenCount);
    metrics.counter('agentgov_alert_deliveries_total', 'Alert deliveries settled, by provider and result (sent, or failed after every retry)', () => this.alertDeliveries());
    metrics.counter('agentgov_alerts_dropped_total', 'Alerts dropped, by reason: ALERT_RATE_LIMIT, or too many deliveries under way to one provider (overflow)', () => {
      const dropped = this.alerts.deliveryCounts()?.dropped ?? { rate_limit: 0, overflow: 0 };
      return Object.entries(dropped).map(([reason, count]): Sample => [{ reason }, count]);
    });
    await this.telemetry.observe(this.events);
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.telemetry.listen();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.telemetry.close();
  }

  private alertDeliveries(): Sample[] {
    const counts = this.alerts.deliveryCounts();
    if (counts === null) return [];
    return counts.providers.flatMap(({ provider, sent, failed }): Sample[] => [
      [{ provider, result: 'sent' }, sent],
      [{ provider, result: 'failed' }, failed],
    ]);
  }
}

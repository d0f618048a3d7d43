import { Inject, Injectable, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Logger } from 'pino';
import { LOGGER } from '../../core/logging/logging.module';
import type { OrgFacts } from '../../core/policy-engine/types';
import { PLANS, PlanId, UNLIMITED } from '../../core/config/plans';

interface OrgUsage {
  orgId: string;
  plan: PlanId;
  /** Active agents at the last load or flush. */
  agents: number;
  period: string;
  /** First millisecond of the next period: a cheap "is this still my month" check. */
  periodEndsMs: number;
  limit: number;
  /** Count stored in usage_counters (all instances) at the last flush. */
  stored: number;
  /** Checks counted here and not yet written. */
  pending: number;
}

const FLUSH_INTERVAL_MS = 1000;

/**
 * Counts policy checks against each organization's monthly quota (`policyChecksPerMonth`).
 * Counting is in memory and written every second with one upsert per active organization, so
 * the decision path does no I/O; instances see each other's counts (and plan changes) at each
 * flush, which bounds a quota overshoot to about one second of traffic per instance. Every
 * plan is counted (unlimited ones too: `org.usage.policy_checks` in policies, and the usage the
 * organization endpoint shows), but only limited ones are ever refused.
 */
@Injectable()
export class UsageMeter implements OnModuleInit, OnApplicationShutdown {
  private readonly usage = new Map<string, OrgUsage>();
  private readonly loading = new Map<string, Promise<OrgUsage>>();
  private timer?: NodeJS.Timeout;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  onModuleInit(): void {
    this.timer = setInterval(() => void this.flush(), FLUSH_INTERVAL_MS);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  /**
   * The organization's plan and usage as policies read them (`org.*`), counting the check just
   * made; undefined before its first check. A fresh object: decision inputs are recorded later.
   */
  orgFacts(orgId: string): OrgFacts | undefined {
    const usage = this.usage.get(orgId);
    if (usage === undefined) return undefined;
    return { id: orgId, plan: usage.plan, usage: { policy_checks: usage.stored + usage.pending, agents: usage.agents } };
  }

  /** Counts one policy check; false when the month's quota is used up. Resolved at once when loaded. */
  tryConsume(orgId: string, nowMs: number): Promise<boolean> {
    const usage = this.usage.get(orgId);
    if (usage !== undefined && nowMs < usage.periodEndsMs) return Promise.resolve(consume(usage));
    return this.load(orgId, nowMs).then(consume);
  }

  /** Checks used this month, including those not yet written. */
  async usedThisMonth(orgId: string, nowMs = Date.now()): Promise<number> {
    const period = periodOf(nowMs);
    const rows: Array<{ policy_checks: string }> = await this.dataSource.query(
      'SELECT policy_checks FROM usage_counters WHERE org_id = $1 AND period = $2',
      [orgId, period],
    );
    const usage = this.usage.get(orgId);
    const pending = usage?.period === period ? usage.pending : 0;
    return Number(rows[0]?.policy_checks ?? 0) + pending;
  }

  /** Writes pending counts; organizations with nothing pending reload on next use. */
  flush(): Promise<void> {
    this.flushing = this.flushing
      .then(() => this.flushNow())
      .catch((error: unknown) => this.logger.error({ err: error }, 'usage flush failed; counts stay pending'));
    return this.flushing;
  }

  private async flushNow(): Promise<void> {
    for (const [orgId, usage] of this.usage) {
      if (usage.pending === 0) {
        usage.periodEndsMs = 0; // reload (limit, other instances' counts) on next use
        continue;
      }
      const pending = usage.pending;
      const rows: Array<{ policy_checks: string; plan: PlanId; agents: string }> = await this.dataSource.query(
        `WITH bumped AS (
           INSERT INTO usage_counters (org_id, period, policy_checks) VALUES ($1, $2, $3)
           ON CONFLICT (org_id, period) DO UPDATE SET policy_checks = usage_counters.policy_checks + EXCLUDED.policy_checks
           RETURNING policy_checks)
         SELECT bumped.policy_checks, o.plan,
                (SELECT count(*) FROM agents a WHERE a.org_id = o.id AND a.revoked_at IS NULL) AS agents
         FROM bumped, organizations o WHERE o.id = $1`,
        [orgId, usage.period, pending],
      );
      usage.pending -= pending;
      if (rows.length === 0) continue;
      usage.stored = Number(rows[0].policy_checks);
      usage.plan = rows[0].plan;
      usage.agents = Number(rows[0].agents);
      usage.limit = PLANS[rows[0].plan].limits.policyChecksPerMonth;
    }
  }

  private load(orgId: string, nowMs: number): Promise<OrgUsage> {
    const inFlight = this.loading.get(orgId);
    if (inFlight) return inFlight;
    const loaded = this.loadNow(orgId, nowMs).finally(() => this.loading.delete(orgId));
    this.loading.set(orgId, loaded);
    return loaded;
  }

  private async loadNow(orgId: string, nowMs: number): Promise<OrgUsage> {
    const period = periodOf(nowMs);
    const existing = this.usage.get(orgId);
    // Counts of an ended month are written under that month before the object moves on.
    if (existing !== undefined && existing.pending > 0 && existing.period !== period) await this.flush();
    const rows: Array<{ plan: PlanId; policy_checks: string | null; agents: string }> = await this.dataSource.query(
      `SELECT o.plan, u.policy_checks, (SELECT count(*) FROM agents a WHERE a.org_id = o.id AND a.revoked_at IS NULL) AS agents
       FROM organizations o
       LEFT JOIN usage_counters u ON u.org_id = o.id AND u.period = $2 WHERE o.id = $1`,
      [orgId, period],
    );
    const plan = rows[0]?.plan ?? 'free';
    // Updated in place: a request may hold the object between its load and its count.
    const usage = existing ?? { orgId, plan, agents: 0, period, periodEndsMs: 0, limit: 0, stored: 0, pending: 0 };
    usage.plan = plan;
    usage.agents = Number(rows[0]?.agents ?? 0);
    usage.period = period;
    usage.periodEndsMs = nextPeriodStartMs(nowMs);
    usage.limit = PLANS[plan].limits.policyChecksPerMonth;
    usage.stored = Number(rows[0]?.policy_checks ?? 0);
    this.usage.set(orgId, usage);
    return usage;
  }
}

function consume(usage: OrgUsage): boolean {
  if (usage.limit !== UNLIMITED && usage.stored + usage.pending >= usage.limit) return false;
  usage.pending++;
  return true;
}

/** The usage period of a moment: its UTC calendar month, e.g. `2026-11`. */
export function periodOf(nowMs: number): string {
  return new Date(nowMs).toISOString().slice(0, 7);
}

function nextPeriodStartMs(nowMs: number): number {
  const now = new Date(nowMs);
  return Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
}

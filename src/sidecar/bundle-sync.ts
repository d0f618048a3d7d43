import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import type { Logger } from 'pino';
import { SidecarConfig } from './sidecar-config';
import { LOGGER } from '../core/logging/logging.module';
import { SidecarHeader, sidecarLabelsText } from '../core/edge-protocol/sidecar-protocol';
import { AuditForwarder } from './audit-forwarder';
import { AuditWal } from './audit-wal';
import { BundleStore } from './bundle-store';
import { EdgeGrants } from './edge-grants';
import { GatewayAnswer, GatewayLink, MAX_GATEWAY_ANSWER_BYTES } from './gateway-link';

const TIMEOUT_NAME = 'bundle-sync';
const JITTER = 0.1;
const FIRST_RETRY_MS = 1000;
/** Fewest milliseconds between a fetch and one started early by an unknown credential. */
const EARLY_SYNC_MIN_GAP_MS = 5000;

/**
 * Keeps the bundle current (docs/sidecar.md "Configuration", BUNDLE_SYNC_INTERVAL): at start the cached bundle, then a
 * fetch at once and every BUNDLE_SYNC_INTERVAL seconds (±10% jitter, so a fleet does not fetch
 * in step), with `If-None-Match` so an unchanged bundle costs a 304. While the gateway is away
 * it retries with exponential backoff from 1 s, never waiting longer than the interval.
 */
@Injectable()
export class BundleSync implements OnApplicationBootstrap, OnApplicationShutdown {
  lastSyncMs: number | null = null;
  lastSuccessMs: number | null = null;
  lastSyncSuccess = false;
  lastError: string | null = null;
  /** Fetches since start by what came of them: a new bundle put in force, the same one, or none (the sidecar's metrics). */
  readonly syncs = { applied: 0, unchanged: 0, failed: 0 };
  private failures = 0;
  private stopped = false;
  /** A fetch is under way (scheduled or early): an early one is not started beside it. */
  private syncing = false;

  constructor(
    private readonly config: SidecarConfig,
    private readonly store: BundleStore,
    private readonly link: GatewayLink,
    private readonly forwarder: AuditForwarder,
    private readonly wal: AuditWal,
    private readonly grants: EdgeGrants,
    private readonly scheduler: SchedulerRegistry,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** The cached bundle before the first request; the first fetch runs at once, without holding up the start. */
  async onApplicationBootstrap(): Promise<void> {
    await this.store.loadCached();
    await this.grants.loadCached();
    this.store.onUnknownCredential = () => this.syncEarly();
    void this.syncAndSchedule();
  }

  /**
   * A fetch now rather than at the next interval: a request named an agent or an API key the
   * bundle does not hold, most likely made at the gateway since the last fetch. That request is
   * refused; a retry a moment later is decided with the new bundle instead of after up to
   * BUNDLE_SYNC_INTERVAL. At most one every EARLY_SYNC_MIN_GAP_MS, so unknown keys cannot make
   * the sidecar hammer its gateway (an unchanged bundle is a 304 anyway).
   */
  syncEarly(): void {
    if (this.syncing || this.stopped) return;
    if (this.lastSyncMs !== null && Date.now() - this.lastSyncMs < EARLY_SYNC_MIN_GAP_MS) return;
    this.schedule(0);
  }

  onApplicationShutdown(): void {
    this.stopped = true;
    if (this.scheduler.doesExist('timeout', TIMEOUT_NAME)) this.scheduler.deleteTimeout(TIMEOUT_NAME);
  }

  /** One fetch; true when the gateway answered with a usable bundle or a 304. */
  async syncOnce(): Promise<boolean> {
    this.lastSyncMs = Date.now();
    // The gateway's fleet status compares it with the numbers it received (`unforwarded`).
    const headers: Record<string, string> = { [SidecarHeader.AuditSeq]: String(this.wal.state().lastSeq) };
    // The gateway puts a rollout to labelled sidecars' new version only in the bundles of those its selector names.
    if (Object.keys(this.config.labels).length > 0) headers[SidecarHeader.Labels] = sidecarLabelsText(this.config.labels);
    const etag = this.store.etag;
    if (etag !== null) headers['if-none-match'] = etag;
    const versionBefore = this.store.bundle?.version;
    const answer = await this.link.get('/api/v1/bundle', headers);
    const ok = answer !== 'unreachable' && answer !== 'too_large' && (await this.handle(answer));
    if (answer === 'unreachable') this.lastError = 'gateway unreachable';
    if (answer === 'too_large') {
      this.lastError = `gateway answer larger than ${MAX_GATEWAY_ANSWER_BYTES / 1024 / 1024} MiB refused`;
      this.logger.error({ limitBytes: MAX_GATEWAY_ANSWER_BYTES }, 'bundle fetch answer too large; refused');
    }
    this.lastSyncSuccess = ok;
    if (!ok) this.syncs.failed++;
    else if (this.store.bundle?.version !== versionBefore) this.syncs.applied++;
    else this.syncs.unchanged++;
    if (ok) {
      this.lastSuccessMs = this.lastSyncMs;
      this.lastError = null;
      this.forwarder.nudge();
      this.grants.bundleChanged();
      // Off the sync: a gateway slow to grant does not hold up the bundle's schedule.
      void this.grants.refresh();
    }
    return ok;
  }

  private async handle(answer: Exclude<GatewayAnswer, 'unreachable'>): Promise<boolean> {
    if (answer.status === 304) return true;
    if (answer.status !== 200) {
      this.lastError = `gateway answered ${answer.status}${answer.status === 401 ? ' (is ADMIN_TOKEN right, or its sidecar token revoked?)' : ''}`;
      this.logger.error({ status: answer.status }, 'bundle fetch refused by the gateway');
      return false;
    }
    let bundle: unknown;
    try {
      bundle = JSON.parse(answer.text);
    } catch {
      this.lastError = 'gateway sent a bundle that is not JSON';
      return false;
    }
    const offer = await this.store.offer(bundle, answer.headers.get('etag'), 'gateway');
    if (offer.applied || offer.reason === 'same version') return true;
    this.lastError = `bundle refused: ${offer.reason}`;
    return false;
  }

  private async syncAndSchedule(): Promise<void> {
    let ok = false;
    this.syncing = true;
    try {
      ok = await this.syncOnce();
    } catch (error) {
      this.lastError = (error as Error).message;
      this.logger.error({ err: error }, 'bundle sync failed');
    } finally {
      this.syncing = false;
    }
    this.failures = ok ? 0 : this.failures + 1;
    this.schedule(this.nextDelayMs());
  }

  private nextDelayMs(): number {
    const interval = this.config.syncIntervalMs;
    const base = this.failures === 0 ? interval : Math.min(interval, FIRST_RETRY_MS * 2 ** (this.failures - 1));
    return Math.max(100, Math.round(base * (1 - JITTER + Math.random() * 2 * JITTER)));
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    if (this.scheduler.doesExist('timeout', TIMEOUT_NAME)) this.scheduler.deleteTimeout(TIMEOUT_NAME);
    const timer = setTimeout(() => {
      this.scheduler.deleteTimeout(TIMEOUT_NAME);
      void this.syncAndSchedule();
    }, delayMs);
    this.scheduler.addTimeout(TIMEOUT_NAME, timer);
  }
}

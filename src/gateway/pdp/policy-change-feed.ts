import { BeforeApplicationShutdown, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { Observable, Subscriber } from 'rxjs';
import { DataSource } from 'typeorm';
import { AppError } from '../../core/common/app-error';
import { ErrorCode } from '../../core/common/error-code';
import { PolicyChangeEvents } from '../changes/policy-change-events';

/** One change as Subscribe reports it (PolicyChangeEvent). */
export interface PolicyChangeView {
  policyVersion: number;
  changed: string[];
  kind: string;
  at: string;
  orgId: string;
}

/** What the stream's consumer (the gRPC call) tells the feed. */
export interface ChangeConsumer {
  /** False while the consumer's buffer is full: nothing more is sent until `drained` resolves. */
  ready(): boolean;
  drained(): Promise<void>;
  /** Runs before each change is sent; its error ends the stream (a revoked credential). */
  allowed(): Promise<void>;
}

/** Versions read per replay query: a subscriber holds at most one page of history. */
export const REPLAY_PAGE = 200;
/** Live changes held for a subscriber that does not take them; one more ends its stream. */
export const MAX_CHANGES_BEHIND = 1000;
/** Replay queries at once across all subscribers, so a reconnect storm leaves the pool to decisions. */
const REPLAY_QUERIES = 2;

type PageReader = (orgId: string, afterVersion: number) => Promise<PolicyChangeView[]>;
type VersionReader = (orgId: string) => Promise<number>;

/**
 * The organization's changes as a stream for Subscribe: first every version after
 * `sinceVersion` from the stored history (policy_versions), page by page as the consumer takes
 * them, then each new one as any instance announces it. Live events that arrive during the
 * catch-up are held and sent after it, once each and in version order, so a subscriber sees
 * every version exactly once. A subscriber more than MAX_CHANGES_BEHIND live changes behind is
 * ended RESOURCE_EXHAUSTED rather than buffered without bound; it resubscribes from the last
 * version it saw. On shutdown the streams end (status OK): the gRPC server's graceful close
 * waits for open calls, and a subscriber reconnects to another instance with the last version.
 */
@Injectable()
export class PolicyChangeFeed implements BeforeApplicationShutdown {
  private readonly open = new Set<Subscriber<PolicyChangeView>>();
  private replayQueries = 0;
  private readonly waitingForQuery: Array<() => void> = [];

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly changes: PolicyChangeEvents,
  ) {}

  changesOf(orgId: string, sinceVersion: number, consumer: ChangeConsumer): Observable<PolicyChangeView> {
    return new Observable<PolicyChangeView>((subscriber) => {
      this.open.add(subscriber);
      const stream = new FeedStream(orgId, sinceVersion, consumer, subscriber, (org, after) => this.page(org, after), (org) => this.currentVersion(org));
      const stop = this.changes.listen((event) => {
        if (event.orgId === orgId) stream.hear({ policyVersion: event.version, changed: event.changed, kind: event.kind, at: new Date().toISOString(), orgId });
      });
      void stream.pump();
      return () => {
        stop();
        this.open.delete(subscriber);
      };
    });
  }

  beforeApplicationShutdown(): void {
    for (const subscriber of [...this.open]) subscriber.complete();
  }

  private page(orgId: string, afterVersion: number): Promise<PolicyChangeView[]> {
    return this.inReplaySlot(() => this.history(orgId, afterVersion));
  }

  private currentVersion(orgId: string): Promise<number> {
    return this.inReplaySlot(async () => {
      const rows: Array<{ version: string | null }> = await this.dataSource.query('SELECT max(version) AS version FROM policy_versions WHERE org_id = $1', [orgId]);
      return Number(rows[0]?.version ?? 0);
    });
  }

  /** Runs `query` as one of at most REPLAY_QUERIES at once. */
  private async inReplaySlot<T>(query: () => Promise<T>): Promise<T> {
    while (this.replayQueries >= REPLAY_QUERIES) await new Promise<void>((resolve) => this.waitingForQuery.push(resolve));
    this.replayQueries++;
    try {
      return await query();
    } finally {
      this.replayQueries--;
      this.waitingForQuery.shift()?.();
    }
  }

  private async history(orgId: string, afterVersion: number): Promise<PolicyChangeView[]> {
    const rows: Array<{ version: string; changed: string[]; kind: string; at: Date }> = await this.dataSource.query(
      `SELECT version, array_agg(policy_name ORDER BY policy_name) AS changed,
              CASE WHEN count(DISTINCT kind) = 1 THEN min(kind) ELSE 'updated' END AS kind, min(created_at) AS at
       FROM policy_versions WHERE org_id = $1 AND version > $2 GROUP BY version ORDER BY version LIMIT $3`,
      [orgId, afterVersion, REPLAY_PAGE],
    );
    return rows.map((row) => ({ policyVersion: Number(row.version), changed: row.changed, kind: row.kind, at: new Date(row.at).toISOString(), orgId }));
  }
}

/** One subscriber's position: the page of history being sent, then the live changes it has not taken yet. */
class FeedStream {
  private last: number;
  private replaying = true;
  private page: PolicyChangeView[] = [];
  private live: PolicyChangeView[] = [];
  private pumping = false;
  private firstPage = true;

  constructor(
    private readonly orgId: string,
    sinceVersion: number,
    private readonly consumer: ChangeConsumer,
    private readonly subscriber: Subscriber<PolicyChangeView>,
    private readonly readPage: PageReader,
    private readonly readVersion: VersionReader,
  ) {
    this.last = sinceVersion;
  }

  hear(change: PolicyChangeView): void {
    if (change.policyVersion <= this.last || this.subscriber.closed) return;
    this.live.push(change);
    if (this.live.length > MAX_CHANGES_BEHIND) {
      this.subscriber.error(new AppError(ErrorCode.RateLimited, `Subscriber fell more than ${MAX_CHANGES_BEHIND} changes behind; subscribe again with since_version ${this.last}`));
      return;
    }
    void this.pump();
  }

  /** Sends while the consumer takes changes; one pump at a time, restarted by each live change. */
  async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (!this.subscriber.closed) {
        if (this.page.length === 0 && this.replaying) await this.readNextPage();
        // Taken and tested in the same turn as the exit, so a change heard meanwhile starts a new pump.
        const change = this.page.shift() ?? this.live.shift();
        if (change === undefined) break;
        await this.send(change);
      }
    } catch (error) {
      this.subscriber.error(error);
    } finally {
      this.pumping = false;
    }
  }

  private async send(change: PolicyChangeView): Promise<void> {
    if (change.policyVersion <= this.last) return;
    await this.consumer.allowed();
    if (this.subscriber.closed) return;
    this.last = change.policyVersion;
    this.subscriber.next(change);
    if (!this.consumer.ready()) await this.consumer.drained();
  }

  private async readNextPage(): Promise<void> {
    this.page = await this.readPage(this.orgId, this.last);
    if (this.firstPage && this.page.length === 0 && this.last > 0) await this.refuseFutureVersion();
    this.firstPage = false;
    const lastRead = this.page.at(-1)?.policyVersion ?? this.last;
    this.live = this.live.filter((change) => change.policyVersion > lastRead);
    if (this.page.length < REPLAY_PAGE) {
      this.replaying = false;
      this.live.sort((a, b) => a.policyVersion - b.policyVersion);
    }
  }

  /**
   * A since_version the organization never reached (a version kept from before a restore, or
   * from another organization) would make the stream drop every change up to it: the
   * subscriber's cache would never be invalidated. Refused, with the version to resume from.
   */
  private async refuseFutureVersion(): Promise<void> {
    const current = await this.readVersion(this.orgId);
    if (this.last <= current) return;
    throw AppError.invalid(`since_version ${this.last} is ahead of the organization's policy_version ${current}: subscribe again with since_version ${current} or lower`);
  }
}

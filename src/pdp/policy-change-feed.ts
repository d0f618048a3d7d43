import { BeforeApplicationShutdown, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { Observable, Subscriber } from 'rxjs';
import { DataSource } from 'typeorm';
import { PolicyChangeEvents } from '../policies/policy-change-events';

/** One change as Subscribe reports it (PolicyChangeEvent). */
export interface PolicyChangeView {
  policyVersion: number;
  changed: string[];
  kind: string;
  at: string;
  orgId: string;
}

/**
 * The organization's changes as a stream for Subscribe: first every version after
 * `sinceVersion` from the stored history (policy_versions), then each new one as any instance
 * announces it. Live events that arrive during the catch-up are held and sent after it, once
 * each and in version order, so a subscriber sees every version exactly once. On shutdown the
 * streams end (status OK): the gRPC server's graceful close waits for open calls, and a
 * subscriber reconnects to another instance with the last version it saw.
 */
@Injectable()
export class PolicyChangeFeed implements BeforeApplicationShutdown {
  private readonly open = new Set<Subscriber<PolicyChangeView>>();
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly changes: PolicyChangeEvents,
  ) {}

  /** `allowed` runs before each change is sent and ends the stream with its error when it throws (a revoked credential). */
  changesOf(orgId: string, sinceVersion: number, allowed: () => Promise<void>): Observable<PolicyChangeView> {
    return new Observable<PolicyChangeView>((subscriber) => {
      this.open.add(subscriber);
      let last = sinceVersion;
      let held: PolicyChangeView[] | null = [];
      let sending = Promise.resolve();
      const send = (change: PolicyChangeView) => {
        sending = sending
          .then(allowed)
          .then(() => subscriber.next(change))
          .catch((error: unknown) => subscriber.error(error));
      };
      const emit = (change: PolicyChangeView) => {
        if (change.policyVersion <= last) return;
        last = change.policyVersion;
        send(change);
      };
      const stop = this.changes.listen((event) => {
        if (event.orgId !== orgId) return;
        const change = { policyVersion: event.version, changed: event.changed, kind: event.kind, at: new Date().toISOString(), orgId };
        if (held !== null) held.push(change);
        else emit(change);
      });
      this.history(orgId, sinceVersion)
        .then((stored) => {
          stored.forEach(emit);
          const live = held!.sort((a, b) => a.policyVersion - b.policyVersion);
          held = null;
          live.forEach(emit);
        })
        .catch((error: unknown) => subscriber.error(error));
      return () => {
        stop();
        this.open.delete(subscriber);
      };
    });
  }

  beforeApplicationShutdown(): void {
    for (const subscriber of [...this.open]) subscriber.complete();
  }

  private async history(orgId: string, sinceVersion: number): Promise<PolicyChangeView[]> {
    const rows: Array<{ version: string; changed: string[]; kind: string; at: Date }> = await this.dataSource.query(
      `SELECT version, array_agg(policy_name ORDER BY policy_name) AS changed,
              CASE WHEN count(DISTINCT kind) = 1 THEN min(kind) ELSE 'updated' END AS kind, min(created_at) AS at
       FROM policy_versions WHERE org_id = $1 AND version > $2 GROUP BY version ORDER BY version`,
      [orgId, sinceVersion],
    );
    return rows.map((row) => ({ policyVersion: Number(row.version), changed: row.changed, kind: row.kind, at: new Date(row.at).toISOString(), orgId }));
  }
}

import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import type { PolicyChangeKind } from './cluster-event';
import { lockNextVersion } from './policy-versions';
import { PolicyChangeEvents } from './policy-change-events';
import { PolicyVersion } from './policy-version.entity';

type RecordedKind = Exclude<PolicyChangeKind, 'created' | 'updated' | 'deleted'>;

/**
 * Changes to what decisions depend on besides the policies themselves (an agent revoked or
 * re-tiered, an API key revoked) take a policy version of their own, in the same history as
 * policy changes. So `policy_version` moves whenever a cached decision may have become wrong,
 * and the PDP's Subscribe stream can replay every such change from any version.
 */
@Injectable()
export class PolicyChangeLog {
  constructor(private readonly changes: PolicyChangeEvents) {}

  /**
   * Records the change under the next version in the caller's transaction: committed apart, a
   * failure between the two left a revocation stored without its version, and a retry found it
   * done, so `policy_version` never moved and SDK caches kept the revoked agent's allows.
   */
  async recordIn(manager: EntityManager, orgId: string, kind: RecordedKind, subjectId: string, actor: string): Promise<number> {
    const next = await lockNextVersion(manager, orgId);
    await manager.getRepository(PolicyVersion).insert({ orgId, version: next, policyName: subjectId, kind, source: null, actor });
    return next;
  }

  /** Tells every instance (and Subscribe) of a change recorded by `recordIn`, once its transaction has committed. */
  announce(orgId: string, version: number, kind: RecordedKind, subjectId: string): Promise<void> {
    return this.changes.announce(orgId, version, [subjectId], kind);
  }
}

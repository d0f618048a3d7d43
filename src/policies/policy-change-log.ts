import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { PolicyChangeKind } from '../cluster/cluster-event';
import { versionOf } from './policies.service';
import { PolicyChangeEvents } from './policy-change-events';
import { PolicyVersion } from './policy-version.entity';

/**
 * Changes to what decisions depend on besides the policies themselves (an agent revoked or
 * re-tiered, an API key revoked) take a policy version of their own, in the same history as
 * policy changes. So `policy_version` moves whenever a cached decision may have become wrong,
 * and the PDP's Subscribe stream can replay every such change from any version.
 */
@Injectable()
export class PolicyChangeLog {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly changes: PolicyChangeEvents,
  ) {}

  /** Records the change under the next version and announces it on every instance; returns the version. */
  async record(orgId: string, kind: Exclude<PolicyChangeKind, 'created' | 'updated' | 'deleted'>, subjectId: string, actor: string): Promise<number> {
    const version = await this.dataSource.transaction(async (manager) => {
      await manager.query('SELECT id FROM organizations WHERE id = $1 FOR UPDATE', [orgId]);
      const next = (await versionOf(manager, orgId)) + 1;
      await manager.getRepository(PolicyVersion).insert({ orgId, version: next, policyName: subjectId, kind, source: null, actor });
      return next;
    });
    await this.changes.announce(orgId, version, [subjectId], kind);
    return version;
  }
}

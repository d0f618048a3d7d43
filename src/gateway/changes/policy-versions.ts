import type { EntityManager } from 'typeorm';
import { AppError } from '../../core/common/app-error';

/**
 * The organization's next policy version, with its row locked until the transaction ends:
 * every change that takes a version (policies, agents, API keys) holds it, so versions are
 * taken one after another.
 */
export async function lockNextVersion(manager: EntityManager, orgId: string): Promise<number> {
  const locked: unknown[] = await manager.query('SELECT id FROM organizations WHERE id = $1 FOR UPDATE', [orgId]);
  if (locked.length === 0) throw AppError.notFound('organization', orgId);
  return (await versionOf(manager, orgId)) + 1;
}

/** The organization's current policy version (0 before its first change). */
export async function versionOf(manager: EntityManager, orgId: string): Promise<number> {
  const rows: Array<{ version: string | null }> = await manager.query('SELECT max(version) AS version FROM policy_versions WHERE org_id = $1', [orgId]);
  return Number(rows[0]?.version ?? 0);
}

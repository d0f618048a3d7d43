import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { isHeld, lockOf, lockOwner, releaseLock, takeLock } from './write-ahead-log';

/**
 * The write-ahead files a client keeps in the default directory (auditLogPath not set): one per
 * client, named for the agent, the process and a random tag, so that replicas, a second run of
 * the same program and several clients in one process never share one (README "Audit events").
 */
export function processAuditFile(directory: string, agentId: string): string {
  return path.join(directory, `audit-${fileSafe(agentId)}-${process.pid}-${randomBytes(4).toString('hex')}.wal`);
}

/**
 * Takes over the agent's files in `directory` that no live client holds (their process ended,
 * or closed with events still unacknowledged): each is renamed to a fresh name this process
 * locked first, so that of two processes starting at once only one takes a file, and a crash
 * in the middle leaves it to the next start. Returns the renamed files, for WriteAheadLog.openFile
 * to move into the client's own. The file of SDK versions before per-process files
 * (`audit-<agentId>.wal`) is taken over too.
 */
export async function claimOrphans(directory: string, agentId: string): Promise<string[]> {
  const names = await fs.promises.readdir(directory).catch(() => [] as string[]);
  const prefix = `audit-${fileSafe(agentId)}`;
  const claimed: string[] = [];
  for (const name of names) {
    if (!isAgentFile(name, prefix)) continue;
    const file = path.join(directory, name);
    const owner = await lockOwner(file);
    if (owner !== undefined && isHeld(owner, file)) continue;
    const claim = processAuditFile(directory, agentId);
    await takeLock(claim);
    try {
      await fs.promises.rename(file, claim);
    } catch (error) {
      await releaseLock(claim);
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw error;
    }
    await fs.promises.rm(lockOf(file), { force: true });
    claimed.push(claim);
  }
  return claimed;
}

/** `<prefix>.wal` or `<prefix>-<pid>-<8 hex>.wal`: never another agent's (`-` is not in a file-safe agent id's tail). */
function isAgentFile(name: string, prefix: string): boolean {
  if (!name.startsWith(prefix) || !name.endsWith('.wal')) return false;
  const rest = name.slice(prefix.length, -'.wal'.length);
  return rest === '' || /^-[0-9]+-[0-9a-f]{8}$/.test(rest);
}

/** The agent id as a file name part: characters other than letters, digits, `_` and `.` become `_`. */
function fileSafe(agentId: string): string {
  return agentId.replace(/[^A-Za-z0-9_.]/g, '_');
}

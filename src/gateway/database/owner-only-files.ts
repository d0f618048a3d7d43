import fs from 'node:fs';
import path from 'node:path';

/**
 * Makes `dir` and everything in it private to the user running the process: directories 0700,
 * files 0600. The embedded database has no authentication and DATA_DIR holds the signing key, so
 * anyone who can read or write these files can read or rewrite the audit trail, add an admin
 * token or sign agent tokens. Symbolic links are not followed (what they point to is not ours to
 * change) and other entries (the database's socket) are left as they are. A file that is not the
 * user's own cannot be changed: the start stops, naming it.
 */
export function restrictToOwner(dir: string): void {
  if (!chmod(dir, 0o700)) return;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const entryPath = path.join(dir, entry.name);
    if (entry.isDirectory()) restrictToOwner(entryPath);
    else if (entry.isFile()) chmod(entryPath, 0o600);
  }
}

/** False when `file` is gone: the running database may remove a temporary file between the listing and here. */
function chmod(file: string, mode: number): boolean {
  try {
    fs.chmodSync(file, mode);
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return false;
    throw new Error(`cannot make ${file} private to the user running the gateway (${code}); DATA_DIR and its files must belong to that user`, { cause: error });
  }
}

import fs from 'node:fs';
import path from 'node:path';

/**
 * Replaces `file` with `data` so that a reader (or a restart after kill -9 or power loss) sees
 * either the old content or the new, never a mix: temporary file, fsync, rename, fsync of the
 * directory.
 */
export function writeFileAtomic(file: string, data: string | Buffer, mode = 0o600): void {
  const temporary = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
  const fd = fs.openSync(temporary, 'w', mode);
  try {
    fs.writeSync(fd, typeof data === 'string' ? Buffer.from(data) : data);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(temporary, file);
  syncDirectory(path.dirname(file));
}

/** Makes a rename or a new file in `dir` durable. */
export function syncDirectory(dir: string): void {
  const fd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** syncDirectory in libuv's thread pool. */
export function syncDirectoryInBackground(dir: string, done: (error: Error | null) => void): void {
  fs.open(dir, 'r', (openError, fd) => {
    if (openError) return done(openError);
    fs.fsync(fd, (syncError) => fs.close(fd, (closeError) => done(syncError ?? closeError)));
  });
}

/** The file's text, or undefined when it does not exist. */
export function readFileIfExists(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

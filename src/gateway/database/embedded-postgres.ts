import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { restrictToOwner } from './owner-only-files';

type WorkerMessage = { type: 'ready' } | { type: 'failed'; message: string } | { type: 'stopped' };

/** pg's default port: `pg` looks for the socket `.s.PGSQL.<port>` in the directory given as host. */
const SOCKET_PORT = 5432;
const SOCKET_NAME = `.s.PGSQL.${SOCKET_PORT}`;
/** sun_path holds 104 bytes on macOS and 108 on Linux, the terminating NUL included; Node cuts a longer path silently. */
const MAX_SOCKET_PATH_BYTES = 103;

/**
 * The worker's source. PGlite runs in a worker thread so WASM query execution never stalls the
 * gateway's event loop, and it is served over the PostgreSQL wire protocol so the same `pg`
 * driver, SQL and migrations run on PGlite and on PostgreSQL. It listens on a Unix socket in a
 * directory only this user can enter: PGlite has no authentication, and a TCP port would let any
 * local user in. The source is inline (with absolute module paths) so it runs the same from
 * ts-jest and from dist/.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { PGlite } = require(${JSON.stringify(require.resolve('@electric-sql/pglite'))});
const { PGLiteSocketServer } = require(${JSON.stringify(require.resolve('@electric-sql/pglite-socket'))});
(async () => {
  const db = await PGlite.create(workerData.dataDir);
  const server = new PGLiteSocketServer({ db, path: workerData.socketPath, maxConnections: workerData.maxConnections });
  await server.start();
  parentPort.on('message', async (message) => {
    if (message.type !== 'stop') return;
    await server.stop();
    await db.close();
    parentPort.postMessage({ type: 'stopped' });
  });
  parentPort.postMessage({ type: 'ready' });
})().catch((error) => parentPort.postMessage({ type: 'failed', message: String(error && error.message || error) }));
`;

/** A running embedded PGlite database, reachable at `url` through a Unix socket only its user can reach. */
export class EmbeddedPostgres {
  private constructor(
    private readonly worker: Worker,
    readonly url: string,
    private readonly lockFile: string,
    /** A directory of our own made for the socket, removed at stop; undefined when the socket is in DATA_DIR. */
    private readonly ownSocketDir: string | undefined,
  ) {}

  /**
   * Starts PGlite in a worker thread on `dataDir`, which it makes private to this user first
   * (mode 0700, files 0600; see restrictToOwner). Takes about 3 s, most of it compiling the WASM
   * module. PGlite is a single session, so the gateway uses one connection; tests sharing one
   * instance across workers raise maxConnections and rely on the socket server serialising
   * transactions.
   */
  static async start(dataDir: string, maxConnections = 1): Promise<EmbeddedPostgres> {
    // PGlite creates its files as the process's umask allows: owner only, whatever the shell set.
    process.umask(0o077);
    fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    restrictToOwner(dataDir);
    const lockFile = lockDataDir(dataDir);
    const socketDir = socketDirectoryFor(dataDir);
    const ownSocketDir = socketDir === dataDir ? undefined : socketDir;
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { dataDir, socketPath: path.join(socketDir, SOCKET_NAME), maxConnections } });
    try {
      await waitForReady(worker);
      // The first start writes the files of a new database with mode 0666, whatever the umask.
      restrictToOwner(dataDir);
      return new EmbeddedPostgres(worker, socketUrl(socketDir), lockFile, ownSocketDir);
    } catch (error) {
      await worker.terminate();
      releaseDirectories(lockFile, ownSocketDir);
      throw error;
    }
  }

  /** Closes the database cleanly so everything written reaches the data directory. */
  async stop(): Promise<void> {
    const stopped = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 10_000);
      const done = () => {
        clearTimeout(timer);
        resolve();
      };
      this.worker.on('message', (message: WorkerMessage) => message.type === 'stopped' && done());
      this.worker.once('exit', done);
    });
    this.worker.postMessage({ type: 'stop' });
    await stopped;
    await this.worker.terminate();
    releaseDirectories(this.lockFile, this.ownSocketDir);
  }
}

/** `pg` reads a host starting with `/` as the directory of a Unix socket. */
function socketUrl(socketDir: string): string {
  return `postgres://postgres@${encodeURIComponent(socketDir)}:${SOCKET_PORT}/postgres`;
}

/**
 * The socket goes in DATA_DIR, now private to this user, where the lock held makes it ours: a
 * socket left by a killed process is removed. When that path is too long for a socket address,
 * it goes in a new directory of our own (mkdtemp: mode 0700) under the system's temporary one.
 */
function socketDirectoryFor(dataDir: string): string {
  const socketPath = path.join(dataDir, SOCKET_NAME);
  if (Buffer.byteLength(socketPath) > MAX_SOCKET_PATH_BYTES) return fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-db-'));
  if (fs.lstatSync(socketPath, { throwIfNoEntry: false })?.isSocket()) fs.rmSync(socketPath);
  return dataDir;
}

function releaseDirectories(lockFile: string, ownSocketDir: string | undefined): void {
  fs.rmSync(lockFile, { force: true });
  if (ownSocketDir !== undefined) fs.rmSync(ownSocketDir, { recursive: true, force: true });
}

/**
 * Claims the data directory for this process: two processes on one PGlite directory would
 * corrupt it. A lock left by a process that no longer runs is taken over.
 */
function lockDataDir(dataDir: string): string {
  const lockFile = path.join(dataDir, 'embedded.lock');
  for (let attempt = 0; attempt < 2; attempt++) {
    if (createExclusive(lockFile)) return lockFile;
    const owner = Number(fs.readFileSync(lockFile, 'utf8'));
    if (isRunning(owner)) {
      throw new Error(`the embedded database in ${dataDir} is in use by process ${owner}; stop it first, or set DATABASE_URL to share a PostgreSQL server`);
    }
    fs.rmSync(lockFile, { force: true });
  }
  throw new Error(`could not lock ${lockFile}`);
}

/** Writes our pid to `file` unless it exists; false when it does. */
function createExclusive(file: string): boolean {
  try {
    fs.writeFileSync(file, String(process.pid), { flag: 'wx', mode: 0o600 });
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
}

function isRunning(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function waitForReady(worker: Worker): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const onExit = (code: number) => reject(new Error(`embedded database exited during start (code ${code})`));
    worker.once('error', reject);
    worker.once('exit', onExit);
    worker.once('message', (message: WorkerMessage) => {
      worker.off('error', reject);
      worker.off('exit', onExit);
      if (message.type === 'ready') resolve();
      else reject(new Error(`embedded database failed to start: ${message.type === 'failed' ? message.message : message.type}`));
    });
  });
}

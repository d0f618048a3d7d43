import fs from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';

type WorkerMessage = { type: 'ready'; port: number } | { type: 'failed'; message: string } | { type: 'stopped' };

/**
 * The worker's source. PGlite runs in a worker thread so WASM query execution never stalls the
 * gateway's event loop, and it is served over the PostgreSQL wire protocol on loopback so the
 * same `pg` driver, SQL and migrations run on PGlite and on PostgreSQL. The source is inline
 * (with absolute module paths) so it runs the same from ts-jest and from dist/.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { PGlite } = require(${JSON.stringify(require.resolve('@electric-sql/pglite'))});
const { PGLiteSocketServer } = require(${JSON.stringify(require.resolve('@electric-sql/pglite-socket'))});
(async () => {
  const db = await PGlite.create(workerData.dataDir);
  const server = new PGLiteSocketServer({ db, port: 0, host: '127.0.0.1', maxConnections: workerData.maxConnections });
  await server.start();
  parentPort.on('message', async (message) => {
    if (message.type !== 'stop') return;
    await server.stop();
    await db.close();
    parentPort.postMessage({ type: 'stopped' });
  });
  parentPort.postMessage({ type: 'ready', port: server.server.address().port });
})().catch((error) => parentPort.postMessage({ type: 'failed', message: String(error && error.message || error) }));
`;

/** A running embedded PGlite database reachable at `url` on loopback. */
export class EmbeddedPostgres {
  private constructor(
    private readonly worker: Worker,
    readonly url: string,
    private readonly lockFile: string | undefined,
  ) {}

  /**
   * Starts PGlite in a worker thread; `dataDir` undefined gives an in-memory database.
   * Takes about 3 s, most of it compiling the WASM module. PGlite is a single session, so the
   * gateway uses one connection; tests sharing one instance across workers raise maxConnections
   * and rely on the socket server serialising transactions.
   */
  static async start(dataDir: string | undefined, maxConnections = 1): Promise<EmbeddedPostgres> {
    const lockFile = dataDir === undefined ? undefined : lockDataDir(dataDir);
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { dataDir, maxConnections } });
    try {
      const port = await waitForReady(worker);
      return new EmbeddedPostgres(worker, `postgres://postgres@127.0.0.1:${port}/postgres`, lockFile);
    } catch (error) {
      await worker.terminate();
      if (lockFile) fs.rmSync(lockFile, { force: true });
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
    if (this.lockFile) fs.rmSync(this.lockFile, { force: true });
  }
}

/**
 * Claims the data directory for this process: two processes on one PGlite directory would
 * corrupt it. A lock left by a process that no longer runs is taken over.
 */
function lockDataDir(dataDir: string): string {
  fs.mkdirSync(dataDir, { recursive: true });
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
    fs.writeFileSync(file, String(process.pid), { flag: 'wx' });
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

function waitForReady(worker: Worker): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const onExit = (code: number) => reject(new Error(`embedded database exited during start (code ${code})`));
    worker.once('error', reject);
    worker.once('exit', onExit);
    worker.once('message', (message: WorkerMessage) => {
      worker.off('error', reject);
      worker.off('exit', onExit);
      if (message.type === 'ready') resolve(message.port);
      else reject(new Error(`embedded database failed to start: ${message.type === 'failed' ? message.message : message.type}`));
    });
  });
}

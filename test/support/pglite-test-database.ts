import path from 'node:path';
import { Worker } from 'node:worker_threads';

type Message = { type: 'ready'; port: number } | { type: 'failed'; message: string } | { type: 'stopped' };

/**
 * An in-memory PGlite for the e2e suites, safe for many concurrent connections (see
 * pglite-test-server.js). On loopback TCP, unlike the gateway's embedded database (a Unix socket):
 * suites take it down to see the gateway answer 503, and a Unix socket taken down refuses with
 * ENOENT, which the gateway does not count as an unreachable database (src/core/common/error-body.ts).
 */
export class PgliteTestDatabase {
  private constructor(
    private readonly worker: Worker,
    readonly url: string,
  ) {}

  /** Starts PGlite in a worker thread (PGlite cannot load inside Jest's module sandbox). */
  static async start(): Promise<PgliteTestDatabase> {
    const worker = new Worker(path.join(__dirname, 'pglite-test-server.js'));
    const port = await new Promise<number>((resolve, reject) => {
      worker.once('error', reject);
      worker.once('message', (message: Message) => (message.type === 'ready' ? resolve(message.port) : reject(new Error(`test database failed to start: ${JSON.stringify(message)}`))));
    });
    return new PgliteTestDatabase(worker, `postgres://postgres@127.0.0.1:${port}/postgres`);
  }

  async stop(): Promise<void> {
    const stopped = new Promise<void>((resolve) => {
      this.worker.on('message', (message: Message) => message.type === 'stopped' && resolve());
      this.worker.once('exit', () => resolve());
    });
    this.worker.postMessage({ type: 'stop' });
    await stopped;
    await this.worker.terminate();
  }
}

import { ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import { sleep } from './private-services';

/** A status and parsed JSON body, or null when nothing answered in time. */
export async function getJson(url: string, timeoutMs = 2000, headers: Record<string, string> = {}): Promise<{ status: number; body: Record<string, unknown> } | null> {
  try {
    const response = await fetch(url, { headers, signal: AbortSignal.timeout(timeoutMs) });
    const text = await response.text();
    return { status: response.status, body: text.startsWith('{') ? (JSON.parse(text) as Record<string, unknown>) : {} };
  } catch {
    return null;
  }
}

/** A process that did not answer in time, as opposed to one that exited: a machine too slow, not a defect by itself. */
export class NotReadyInTime extends Error {}

/** `body[object][field]` when it is a number (a /health report's counters). */
export function numberIn(body: Record<string, unknown> | undefined, object: string, field: string): number | null {
  const value = (body?.[object] as Record<string, unknown> | undefined)?.[field];
  return typeof value === 'number' ? value : null;
}

/**
 * One built entry point (`dist/src/main.js`, `dist/src/sidecar/main.js`) run as users run it,
 * restartable on the same port with the same environment; its output appended to a log file.
 */
export class ServiceProcess {
  private child: ChildProcess | null = null;
  private exited: Promise<void> = Promise.resolve();
  private tail = '';

  constructor(
    readonly name: string,
    private readonly main: string,
    private readonly nodeArgs: string[],
    readonly port: number,
    private readonly env: Record<string, string>,
    private readonly logFile: string,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return this.child !== null && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Spawns the process; `ready` waits for it to answer. */
  launch(): void {
    const log = fs.createWriteStream(this.logFile, { flags: 'a' });
    log.write(`\n==== ${new Date().toISOString()} start ${this.name}\n`);
    const child = spawn(process.execPath, [...this.nodeArgs, this.main], {
      env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', ...this.env, PORT: String(this.port) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const keep = (chunk: Buffer) => {
      log.write(chunk);
      this.tail = (this.tail + chunk.toString()).slice(-4000);
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    this.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        log.end(`==== ${new Date().toISOString()} exit ${this.name}: code ${code}, signal ${signal}\n`);
        resolve();
      }),
    );
    this.child = child;
  }

  /** Waits until /health answers as `accept` wants, or throws with the process's last output. */
  async ready(timeoutMs: number, accept: (status: number, body: Record<string, unknown>) => boolean = (status) => status === 200): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (!this.running) throw new Error(`${this.name} exited during start:\n${this.tail}`);
      const health = await getJson(`${this.url}/health`);
      if (health !== null && accept(health.status, health.body)) return;
      if (Date.now() > deadline) throw new NotReadyInTime(`${this.name} not ready after ${timeoutMs} ms (last /health: ${JSON.stringify(health)}):\n${this.tail}`);
      await sleep(100);
    }
  }

  /** kill -9, then waits for the exit. */
  async kill(): Promise<void> {
    if (this.running) this.child!.kill('SIGKILL');
    await this.exited;
  }

  /** SIGTERM (the clean shutdown), then waits for the exit. */
  async stop(): Promise<void> {
    if (this.running) this.child!.kill('SIGTERM');
    await this.exited;
  }

  /** The last few KB of its output, for error messages. */
  output(): string {
    return this.tail;
  }
}

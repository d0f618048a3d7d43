/**
 * The child processes of a benchmark run (helper servers, the gateway, nginx): started, waited
 * for, measured (CPU time from /proc) and always stopped, also when the run fails or the bench
 * process is interrupted.
 */
import { ChildProcess, fork, spawn, SpawnOptions } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import type { ChildMessage, ParentMessage } from './messages';

const OUTPUT_TAIL_CHARS = 4000;
/** Linux USER_HZ: /proc/<pid>/stat times are in these ticks on every mainstream kernel. */
const CLOCK_TICKS_PER_SECOND = 100;

export interface Child {
  readonly name: string;
  readonly process: ChildProcess;
  /** Last few KB of stdout and stderr, for error messages. */
  output(): string;
}

export class ChildSet {
  private readonly children = new Set<Child>();
  /** Set by killAllNow: the run is being torn down, no new process may outlive it. */
  private closed = false;

  /** Forks a compiled helper server and waits for its `listening` message. */
  async fork(name: string, script: string, env: NodeJS.ProcessEnv = {}, timeoutMs = 15_000): Promise<{ child: Child; port: number }> {
    const proc = fork(script, [], { env: { ...baseEnv(), ...env }, execArgv: [], stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
    const child = this.track(name, proc);
    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${name} did not start within ${timeoutMs} ms\n${child.output()}`)), timeoutMs);
      proc.on('message', (message: ChildMessage) => {
        if (message.type !== 'listening') return;
        clearTimeout(timer);
        resolve(message.port);
      });
      proc.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`${name} exited during start (code ${code}, signal ${signal})\n${child.output()}`));
      });
    });
    return { child, port };
  }

  /** Spawns a command (no IPC); the caller waits for it to be ready. */
  spawn(name: string, command: string, args: string[], options: SpawnOptions): Child {
    return this.track(name, spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] }));
  }

  /** SIGTERM, then SIGKILL after `graceMs`; resolves when the process is gone. */
  async stop(child: Child, graceMs = 20_000): Promise<void> {
    const proc = child.process;
    if (proc.exitCode === null && proc.signalCode === null) {
      const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    }
    this.children.delete(child);
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.children].map((child) => this.stop(child, 5000)));
  }

  /** For process 'exit' and signal handlers: no waiting possible there. */
  killAllNow(): void {
    this.closed = true;
    for (const child of this.children) {
      if (child.process.exitCode === null && child.process.signalCode === null) child.process.kill('SIGKILL');
    }
    this.children.clear();
  }

  private track(name: string, proc: ChildProcess): Child {
    if (this.closed) proc.kill('SIGKILL');
    let tail = '';
    const keep = (chunk: Buffer) => {
      tail = (tail + chunk.toString('utf8')).slice(-OUTPUT_TAIL_CHARS);
    };
    proc.stdout?.on('data', keep);
    proc.stderr?.on('data', keep);
    const child: Child = { name, process: proc, output: () => tail };
    this.children.add(child);
    proc.once('exit', () => {
      if (proc.exitCode !== 0 && proc.exitCode !== null) tail += `\n[${name} exited with code ${proc.exitCode}]`;
    });
    return child;
  }
}

/** Asks a forked helper a question over IPC and waits for the answer. */
export function ask(child: Child, message: ParentMessage, timeoutMs = 5000): Promise<ChildMessage> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${child.name} did not answer ${message.type}`)), timeoutMs);
    child.process.once('message', (answer: ChildMessage) => {
      clearTimeout(timer);
      resolve(answer);
    });
    child.process.send(message);
  });
}

/** Only what a process needs to run; the bench's own DATABASE_URL and the like are not passed on. */
export function baseEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const name of ['PATH', 'HOME', 'TMPDIR', 'LANG', 'TZ']) if (process.env[name] !== undefined) env[name] = process.env[name];
  // Tuning knobs of the gateway under test can be passed through (e.g. AUDIT_BATCH_SIZE=100,
  // DECISION_TOKENS=false to price the decision tokens).
  for (const name of Object.keys(process.env)) if (name.startsWith('AUDIT_') || name === 'DECISION_TOKENS') env[name] = process.env[name];
  return env;
}

/** A loopback port free at the time of asking. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Polls `url` until it answers `expectStatus`; fails early when `child` exits. */
export async function waitForHttp(url: string, child: Child, timeoutMs = 60_000, expectStatus = 200): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer';
  while (Date.now() < deadline) {
    if (child.process.exitCode !== null || child.process.signalCode !== null) throw new Error(`${child.name} exited while starting\n${child.output()}`);
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(2000) });
      await response.arrayBuffer();
      if (response.status === expectStatus) return;
      last = `HTTP ${response.status}`;
    } catch (error) {
      last = error instanceof Error ? error.message : String(error);
    }
    await sleep(200);
  }
  throw new Error(`${child.name} not ready at ${url} after ${timeoutMs} ms (${last})\n${child.output()}`);
}

/** User + system CPU seconds a process has used so far, or null where /proc is unavailable. */
export function cpuSeconds(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // fields[0] is field 3 (state); utime and stime are fields 14 and 15.
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return null;
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

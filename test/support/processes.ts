import { ChildProcess, spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { call } from './http-client';

export const GATEWAY_MAIN = path.resolve(__dirname, '../../dist/src/main.js');
export const SIDECAR_MAIN = path.resolve(__dirname, '../../dist/src/sidecar/main.js');

/**
 * METRICS_TOKEN of the sidecars whose tests read /health's details (sidecar id, sync errors, the
 * audit buffer: docs/sidecar.md "Health"), which only its bearer sees.
 */
export const HEALTH_TOKEN = 'e2e-sidecar-health-token-0123456789';

/** A built entry point running as a child process, the way `npm run start:*` runs it. */
export interface ServiceProcess {
  child: ChildProcess;
  url: string;
  output(): { stdout: string; stderr: string };
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGKILL, then waits for the exit. */
  kill(): Promise<void>;
  /** SIGTERM, then waits for the exit. */
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Spawns `main` with only `env` (plus PATH), on `port`. */
export function launch(main: string, port: number, env: Record<string, string>): ServiceProcess {
  const child = spawn(process.execPath, [main], {
    env: { PATH: process.env.PATH ?? '', PORT: String(port), HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const signal = async (name: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(name);
    await exit;
  };
  return { child, url: `http://127.0.0.1:${port}`, output: () => ({ stdout, stderr }), exit, kill: () => signal('SIGKILL'), stop: () => signal('SIGTERM') };
}

/** Waits until `path` answers `status` (and `accept` likes the body), or throws with the process output. */
export async function waitFor(service: ServiceProcess, path: string, accept: (status: number, body: Record<string, unknown>) => boolean, timeoutMs = 60_000, bearer?: string): Promise<Record<string, unknown>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (service.child.exitCode !== null) throw new Error(`process exited with ${service.child.exitCode}: ${service.output().stderr}${service.output().stdout.slice(-2000)}`);
    const response = await call(service.url, 'GET', path, { bearer }).catch(() => null);
    if (response !== null && accept(response.status, response.body)) return response.body;
    if (Date.now() > deadline) throw new Error(`${path} not as expected after ${timeoutMs} ms: ${JSON.stringify(response?.body)} ${service.output().stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** waitFor on a sidecar's detailed /health (its METRICS_TOKEN is HEALTH_TOKEN). */
export function waitForHealth(sidecar: ServiceProcess, accept: (status: number, body: Record<string, unknown>) => boolean, timeoutMs = 60_000): Promise<Record<string, unknown>> {
  return waitFor(sidecar, '/health', accept, timeoutMs, HEALTH_TOKEN);
}

/** Repeats `probe` until it returns true, for up to `timeoutMs`. */
export async function eventually(probe: () => Promise<boolean>, timeoutMs = 30_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`${what} not met after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

import { ChildProcess, spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { call } from './http-client';

const GATEWAY_MAIN = path.resolve(__dirname, '../../dist/src/main.js');

export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Date.now() when the process exited. */
  atMs: number;
}

/** The built gateway (`npm run build`) running as its own process, as `npm start` runs it. */
export interface GatewayProcess {
  child: ChildProcess;
  url: string;
  output(): { stdout: string; stderr: string };
  exit: Promise<ProcessExit>;
}

export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Spawns `node dist/src/main.js` on a free port with only `env` (and PATH) set. */
export async function launchGateway(env: Record<string, string>): Promise<GatewayProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, [GATEWAY_MAIN], {
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PDP_GRPC_PORT: '0', ...env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exit = new Promise<ProcessExit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal, atMs: Date.now() })));
  return { child, url: `http://127.0.0.1:${port}`, output: () => ({ stdout, stderr }), exit };
}

/** Waits until the process answers /health, or throws with its output if it exits first. */
export async function gatewayReady(gateway: GatewayProcess, timeoutMs = 45_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (gateway.child.exitCode !== null) throw new Error(`gateway exited with ${gateway.child.exitCode}: ${gateway.output().stderr}`);
    if (gateway.output().stdout.includes('gateway listening')) {
      const health = await call(gateway.url, 'GET', '/health').catch(() => null);
      if (health?.status === 200) return;
    }
    if (Date.now() > deadline) throw new Error(`gateway not ready after ${timeoutMs} ms: ${gateway.output().stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Kills the process if it still runs (a test that failed half-way must not leave it behind). */
export async function killGateway(gateway: GatewayProcess): Promise<void> {
  if (gateway.child.exitCode !== null || gateway.child.signalCode !== null) return;
  gateway.child.kill('SIGKILL');
  await gateway.exit;
}

/** The promise's value, or 'timeout' after `ms`. */
export async function within<T>(promise: Promise<T>, ms: number): Promise<T | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), ms)));
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

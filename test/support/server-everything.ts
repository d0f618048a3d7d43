import { spawn } from 'node:child_process';
import path from 'node:path';
import { freePort } from './processes';

const MAIN = path.resolve(__dirname, '../../node_modules/@modelcontextprotocol/server-everything/dist/index.js');

/** `@modelcontextprotocol/server-everything` (the MCP reference server of every feature), in Streamable HTTP mode on loopback, as a child process. */
export interface ServerEverything {
  url: string;
  close(): Promise<void>;
}

export async function startServerEverything(): Promise<ServerEverything> {
  const port = await freePort();
  const child = spawn(process.execPath, [MAIN, 'streamableHttp'], { env: { PATH: process.env.PATH ?? '', PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server-everything did not start: ${stderr}`)), 20_000);
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      if (stderr.includes('listening on port')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`server-everything exited (${code}): ${stderr}`)));
  });
  child.stderr!.resume();
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

#!/usr/bin/env node
/* global process, console, fetch, setTimeout, URL */
// The published contracts checked by the tools their readers use (docs/development.md): the
// OpenAPI documents of the gateway and the sidecar under Redocly's recommended rules
// (redocly.yaml), and both /metrics expositions under `promtool check metrics` (Debian's
// prometheus package). Starts the built gateway (dist/, embedded database in a scratch folder)
// and a sidecar beside it, the way users start them; exits non-zero on any error.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const scratch = mkdtempSync(path.join(tmpdir(), 'lint-api-'));
const adminToken = 'lint-api-admin-token-0123456789abcdef';
const children = [];

async function freePort() {
  const server = net.createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function start(main, env) {
  const child = spawn(process.execPath, [path.join(root, main)], { env: { PATH: process.env.PATH, HOST: '127.0.0.1', LOG_LEVEL: 'error', ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
  children.push(child);
  return child;
}

async function fetchText(url, what, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const answer = await fetch(url).catch(() => null);
    if (answer?.ok) return answer.text();
    if (Date.now() > deadline) throw new Error(`${what}: ${url} did not answer 200 within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

function run(command, args, input) {
  const result = spawnSync(command, args, { input, encoding: 'utf8', cwd: root });
  if (result.error) throw new Error(`${command}: ${result.error.message}${command === 'promtool' ? " (install Debian's prometheus package)" : ''}`);
  process.stdout.write(result.stdout);
  process.stderr.write(result.stderr);
  return result.status === 0;
}

async function main() {
  const [port, metricsPort, sidecarPort, sidecarMetricsPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
  start('dist/src/main.js', { PORT: String(port), METRICS_PORT: String(metricsPort), PDP_GRPC_PORT: '0', DATA_DIR: path.join(scratch, 'data'), ADMIN_TOKEN: adminToken, POLICIES_FILE: path.join(root, 'config/policies.yaml'), PUBLIC_URL: `http://127.0.0.1:${port}` });
  const gateway = await fetchText(`http://127.0.0.1:${port}/docs-json`, 'gateway');
  start('dist/src/sidecar/main.js', { PORT: String(sidecarPort), METRICS_PORT: String(sidecarMetricsPort), GATEWAY_URL: `http://127.0.0.1:${port}`, ADMIN_TOKEN: adminToken, CACHE_DIR: path.join(scratch, 'cache') });
  const sidecar = await fetchText(`http://127.0.0.1:${sidecarPort}/docs-json`, 'sidecar');
  const documents = { gateway, sidecar };
  for (const [name, text] of Object.entries(documents)) writeFileSync(path.join(scratch, `${name}.openapi.json`), text);
  let ok = run(path.join(root, 'node_modules/.bin/redocly'), ['lint', '--config', 'redocly.yaml', '--format', 'stylish', ...Object.keys(documents).map((name) => path.join(scratch, `${name}.openapi.json`))]);
  for (const [name, url] of [['gateway', `http://127.0.0.1:${metricsPort}/metrics`], ['sidecar', `http://127.0.0.1:${sidecarMetricsPort}/metrics`]]) {
    const exposition = await fetchText(url, `${name} metrics`);
    const clean = run('promtool', ['check', 'metrics'], exposition);
    console.log(`promtool check metrics (${name}): ${clean ? 'clean' : 'problems above'}`);
    ok &&= clean;
  }
  return ok;
}

let status = 1;
try {
  status = (await main()) ? 0 : 1;
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
} finally {
  for (const child of children) child.kill('SIGKILL');
  rmSync(scratch, { recursive: true, force: true });
}
process.exit(status);

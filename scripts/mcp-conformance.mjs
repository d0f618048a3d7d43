#!/usr/bin/env node
/* global process, console, fetch, setTimeout */
// The official MCP conformance suite (@modelcontextprotocol/conformance, server mode) through the
// gateway's /mcp/<name> (docs/mcp.md, "Conformance"): the suite's own reference server
// (test/conformance/reference-server.mts, from the suite's repository at its version) is the
// upstream; every scenario is run directly against it, then through the gateway started from
// dist/ on an embedded database. Exit 1 when a scenario that passes directly fails through the
// gateway. The suite needs Node.js 22 or later: NODE24_BIN (scripts/node24.sh prints it).
// The suite sends no Authorization header, so a loopback relay adds the agent's token and
// passes everything else (Host and Origin too) unchanged.
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const NODE24 = path.join(process.env.NODE24_BIN ?? execFileSync(path.join(ROOT, 'scripts', 'node24.sh'), { encoding: 'utf8' }).trim().split('\n').at(-1), 'node');
const SUITE = path.join(ROOT, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
const ADMIN_TOKEN = 'conformance-admin-token-0123456789abcdef';
/**
 * Scenarios known to fail through the gateway now and then, each an open defect named in
 * docs/mcp.md ("Conformance"): printed as a KNOWN GAP and not failing the stage; one that passes
 * is printed too, so the list only shrinks.
 */
const KNOWN_GAPS = new Set(['tools-call-sampling']);
const children = [];

const freePort = () =>
  new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });

function start(name, command, args, env) {
  const child = spawn(command, args, { cwd: ROOT, env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  children.push(child);
  child.output = () => output;
  child.name = name;
  return child;
}

async function waitFor(url, child, status) {
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${child.name} exited: ${child.output()}`);
    try {
      const response = await fetch(url);
      await response.arrayBuffer();
      if (response.status === status) return;
    } catch {
      // not up yet
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`${child.name} did not start: ${child.output()}`);
}

/** Runs the suite against a URL: each scenario's checks passed and failed. */
function runSuite(url, outputDir) {
  const run = start('conformance', NODE24, [SUITE, 'server', '--url', url, '-o', outputDir], {});
  return new Promise((resolve) => {
    run.once('exit', () => {
      const results = new Map();
      for (const line of run.output().split('\n')) {
        const match = /^([✓✗]) (\S+): (\d+) passed, (\d+) failed/.exec(line.trim());
        if (match) results.set(match[2], { passed: Number(match[3]), failed: Number(match[4]) });
      }
      resolve({ results, output: run.output() });
    });
  });
}

/** Adds the agent's token to every request, nothing else changed. */
function tokenRelay(port, target, token) {
  const server = http.createServer((request, response) => {
    const upstream = http.request({ host: '127.0.0.1', port: target, path: request.url, method: request.method, headers: { ...request.headers, authorization: `Bearer ${token}` } }, (answer) => {
      response.writeHead(answer.statusCode, answer.headers);
      answer.pipe(response);
    });
    upstream.on('error', () => response.destroy());
    request.pipe(upstream);
    response.on('close', () => upstream.destroy());
  });
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(server)));
}

async function main() {
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-conformance-'));
  try {
    const referencePort = await freePort();
    const reference = start('reference server', NODE24, [path.join(ROOT, 'test', 'conformance', 'reference-server.mts')], { PORT: String(referencePort) });
    await waitFor(`http://localhost:${referencePort}/mcp`, reference, 400);
    const direct = await runSuite(`http://localhost:${referencePort}/mcp`, path.join(scratch, 'direct'));

    const gatewayPort = await freePort();
    fs.writeFileSync(path.join(scratch, 'servers.yaml'), `servers:\n  - name: reference\n    url: http://localhost:${referencePort}/mcp\n`);
    const gateway = start('gateway', process.execPath, [path.join(ROOT, 'dist', 'src', 'main.js')], {
      PORT: String(gatewayPort),
      HOST: '127.0.0.1',
      PDP_GRPC_PORT: '0',
      ADMIN_TOKEN,
      DATA_DIR: path.join(scratch, 'data'),
      POLICIES_FILE: '/dev/null',
      LOG_LEVEL: 'warn',
      MCP_SERVERS: path.join(scratch, 'servers.yaml'),
    });
    await waitFor(`http://127.0.0.1:${gatewayPort}/health`, gateway, 200);
    const created = await fetch(`http://127.0.0.1:${gatewayPort}/admin/agents`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-admin-token': ADMIN_TOKEN },
      body: JSON.stringify({ name: 'conformance', trustTier: 'trusted' }),
    });
    const { token } = await created.json();
    const relayPort = await freePort();
    const relay = await tokenRelay(relayPort, gatewayPort, token);
    const through = await runSuite(`http://localhost:${relayPort}/mcp/reference`, path.join(scratch, 'through'));
    relay.close();

    const lost = [];
    const knownNow = [];
    for (const [scenario, result] of direct.results) {
      const relayed = through.results.get(scenario);
      const mark = result.failed === 0 ? (relayed?.failed === 0 ? 'pass, pass' : 'pass, FAIL') : 'fails directly';
      console.log(`${mark.padEnd(16)} ${scenario}: directly ${result.passed} passed ${result.failed} failed; through the gateway ${relayed?.passed ?? 0} passed ${relayed?.failed ?? '?'} failed`);
      if (result.failed === 0 && relayed?.failed !== 0) (KNOWN_GAPS.has(scenario) ? knownNow : lost).push(scenario);
    }
    const passedDirectly = [...direct.results.values()].filter((result) => result.failed === 0).length;
    console.log(`\n${direct.results.size} scenarios; ${passedDirectly} pass directly; ${passedDirectly - lost.length - knownNow.length} of them pass through the gateway`);
    if (knownNow.length > 0) console.log(`KNOWN GAP, not failing the stage (docs/mcp.md, "Conformance"): ${knownNow.join(', ')}`);
    for (const scenario of KNOWN_GAPS) if (through.results.get(scenario)?.failed === 0) console.log(`${scenario} passed through the gateway: take it off KNOWN_GAPS`);
    if (direct.results.size === 0) {
      console.log(direct.output);
      process.exitCode = 2;
    } else if (lost.length > 0) {
      console.log(`failing through the gateway only: ${lost.join(', ')}\n(the suite's output: ${path.join(scratch, 'through')})`);
      process.exitCode = 1;
    }
  } finally {
    for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
    if (process.exitCode !== 1) fs.rmSync(scratch, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  process.exit(2);
});

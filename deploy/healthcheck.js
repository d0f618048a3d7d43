#!/usr/bin/env node
/**
 * The Docker image's HEALTHCHECK, for both of its roles: the gateway (`dist/src/main.js`, port
 * 3000 by default) and the edge sidecar (`dist/src/sidecar/main.js`, port 4000 by default). The
 * role is read from the container's main process, so `docker run … node dist/src/sidecar/main.js`
 * is checked on the sidecar's port without any further setting; `PORT`, which both read, wins.
 * Healthy when `GET /health` answers 2xx within 2.5 s (docs/operations.md "Docker").
 *
 * Usage: node deploy/healthcheck.js [file holding the main process's command line]
 */
/* global fetch, AbortSignal */
const fs = require('node:fs');

const SIDECAR_ENTRY = 'dist/src/sidecar/main.js';
const DEFAULT_PORT = { gateway: '3000', sidecar: '4000' };
const TIMEOUT_MS = 2500;

/** `sidecar` when the command line runs the sidecar's entry point, else `gateway`. */
function roleOf(commandLine) {
  return commandLine.includes(SIDECAR_ENTRY) ? 'sidecar' : 'gateway';
}

/** The health URL of the process `commandLine` runs, given the container's environment. */
function healthUrl(commandLine, env) {
  const port = env.PORT || DEFAULT_PORT[roleOf(commandLine)];
  return `http://127.0.0.1:${port}/health`;
}

function readCommandLine(file) {
  try {
    // /proc/<pid>/cmdline separates the arguments with NUL bytes.
    return fs.readFileSync(file, 'utf8').split('\0').join(' ');
  } catch {
    return '';
  }
}

async function main() {
  const url = healthUrl(readCommandLine(process.argv[2] || '/proc/1/cmdline'), process.env);
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(TIMEOUT_MS) });
    if (response.ok) return 0;
    process.stderr.write(`${url}: ${response.status}\n`);
    return 1;
  } catch (error) {
    process.stderr.write(`${url}: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

if (require.main === module) {
  main().then((code) => process.exit(code));
}

module.exports = { healthUrl, roleOf };

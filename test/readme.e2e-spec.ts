import { ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { call } from './support/http-client';
import { ownDatabase, OwnDatabase } from './support/own-database';
import { freePort } from './support/processes';
import { bashScript, ExampleStep, missingFragment, runnableExamples, RunnableExamples, shellBlocks } from './support/readme-examples';
import { testDatabaseKind } from './support/test-gateway';

/**
 * The documents' examples are true: the README's walk-through, then the examples of docs/pdp.md
 * and docs/identity.md (which continue it), run as a reader runs them, in one bash session,
 * against a gateway started as `npm start` starts it (`node dist/src/main.js`, the demo policies
 * of config/policies.yaml, a fresh DATA_DIR). Every `# →` line is checked (conventions in
 * support/readme-examples.ts). What the test does in the reader's place:
 * - starts the gateway itself for the README's `npm start` line, with that line's variables, on
 *   a free port (and with gRPC off); on the PostgreSQL run, on a database of its own;
 * - supplies the admin token the reader pastes, read from between the `==== ADMIN TOKEN` lines;
 * - writes the gateway's port for 3000 and a free port for the upstream's 8080;
 * - between blocks, waits as a reader would (0.3 s) and until the gateway's audit trail has
 *   written what it was given (/health `audit.pending` 0), so "what happened" finds it.
 */

const ROOT = path.resolve(__dirname, '..');
const GATEWAY_MAIN = path.join(ROOT, 'dist', 'src', 'main.js');
const RUN = [
  { file: 'README.md', section: 'Five-minute walk-through' },
  { file: 'docs/pdp.md' },
  { file: 'docs/identity.md' },
];
const BASH_TIMEOUT_MS = 90_000;

interface Gateway {
  child: ChildProcess;
  url: string;
  stderr(): string;
  stop(): Promise<void>;
}

describe('the documents’ examples', () => {
  let work: string;
  let database: OwnDatabase | undefined;
  let gateway: Gateway | undefined;

  beforeEach(() => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-readme-'));
  });

  afterEach(async () => {
    await gateway?.stop();
    await database?.dispose();
    gateway = undefined;
    database = undefined;
    fs.rmSync(work, { recursive: true, force: true });
  });

  it('run as the documents say and answer what they show', async () => {
    const examples = runnableExamples(RUN.map(({ file, section }) => ({ file, blocks: shellBlocks(ROOT, file, section) })));
    expect(examples.gatewayStarts.map((start) => start.where)).toEqual([expect.stringMatching(/^README\.md:/)]);
    expect(examples.pasted).toEqual(['ADMIN']);
    const checked = examples.blocks.flat().filter((step) => step.expectations.length > 0);
    for (const { file } of RUN) expect(checked.some((step) => step.where.startsWith(`${file}:`))).toBe(true);

    const gatewayPort = await freePort();
    const upstreamPort = await freePort();
    const local = localPorts(gatewayPort, upstreamPort);
    const run = withPorts(examples, local);

    const env: Record<string, string> = { ...run.gatewayStarts[0].env, DATA_DIR: path.join(work, 'data'), PORT: String(gatewayPort), HOST: '127.0.0.1', PDP_GRPC_PORT: '0' };
    if (testDatabaseKind() === 'postgres') {
      database = await ownDatabase();
      env.DATABASE_URL = database.url;
    }
    gateway = await startGateway(env);
    const adminToken = /==== ADMIN TOKEN[^\n]*\n(\S+)\n/.exec(gateway.stderr())?.[1];
    expect(adminToken).toMatch(/^adm_/);

    const outputDir = path.join(work, 'out');
    fs.mkdirSync(outputDir);
    const prelude = [
      `readme_pace() {`,
      `  sleep 0.3`,
      `  for attempt in $(seq 200); do`,
      `    if curl -s ${gateway.url}/health | grep -q '"pending":0' && curl -s -o /dev/null http://127.0.0.1:${upstreamPort}/; then return 0; fi`,
      `    sleep 0.1`,
      `  done`,
      `  echo "readme_pace: the gateway's audit trail or the upstream is not ready" >&2; return 1`,
      `}`,
    ].join('\n');
    const { script, steps } = bashScript(run, prelude, outputDir);
    const scriptFile = path.join(work, 'examples.sh');
    fs.writeFileSync(scriptFile, script);

    const result = await runBash(scriptFile, work, { READMETEST_PASTED_ADMIN: adminToken! });
    if (result.code !== 0) throw new Error(failedRun(result, steps, outputDir));

    const wrong = steps.flatMap((step, index) => {
      if (step.expectations.length === 0) return [];
      const output = fs.readFileSync(path.join(outputDir, `${index}.out`), 'utf8');
      const missing = missingFragment(output, step.expectations);
      return missing === null ? [] : [`${step.where}: the output lacks ${JSON.stringify(missing)}\n$ ${step.command}\n${output.slice(0, 3000)}`];
    });
    expect(wrong).toEqual([]);
  }, 180_000);

  it('name every configuration variable the gateway and the sidecar read in docs/configuration.md', () => {
    const readers = ['core/config/app-config.ts', 'core/config/shared-settings.ts', 'sidecar/sidecar-config.ts'].map((file) => fs.readFileSync(path.join(ROOT, 'src', file), 'utf8')).join('\n');
    const variables = [...new Set([...readers.matchAll(/read\.\w+\('([A-Z][A-Z0-9_]*)'/g)].map((match) => match[1]))];
    expect(variables.length).toBeGreaterThan(40);
    const documented = fs.readFileSync(path.join(ROOT, 'docs', 'configuration.md'), 'utf8');
    expect(variables.filter((name) => !documented.includes(`\`${name}\``))).toEqual([]);
  });

  it('link only to files that exist', () => {
    const documents = ['README.md', ...fs.readdirSync(path.join(ROOT, 'docs')).map((file) => `docs/${file}`)].filter((file) => file.endsWith('.md'));
    const broken = documents.flatMap((file) => {
      const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
      // Markdown links are relative to their document; "docs/x.md" in the text names a file of the project.
      const linked = [...text.matchAll(/\]\(([^)\s#]+)(?:#[^)]*)?\)/g)]
        .map((match) => match[1])
        .filter((target) => !/^[a-z]+:/.test(target))
        .map((target) => path.join(path.dirname(file), target));
      const mentioned = [...text.matchAll(/\bdocs\/[\w-]+\.md\b/g)].map((match) => match[0]);
      return [...linked, ...mentioned].filter((target) => !fs.existsSync(path.join(ROOT, target))).map((target) => `${file}: ${target}`);
    });
    expect(broken).toEqual([]);
  });
});

/** The documents' ports (3000 for the gateway, 8080 for the upstream) as this run's. */
function localPorts(gatewayPort: number, upstreamPort: number): (text: string) => string {
  return (text) => text.replace(/\blocalhost:3000\b/g, `localhost:${gatewayPort}`).replace(/\b8080\b/g, String(upstreamPort));
}

function withPorts(examples: RunnableExamples, local: (text: string) => string): RunnableExamples {
  const step = (item: ExampleStep): ExampleStep => ({ ...item, command: local(item.command), expectations: item.expectations.map(local) });
  return {
    blocks: examples.blocks.map((block) => block.map(step)),
    gatewayStarts: examples.gatewayStarts.map((start) => ({ ...start, env: Object.fromEntries(Object.entries(start.env).map(([name, value]) => [name, local(value)])) })),
    pasted: examples.pasted,
  };
}

/** `node dist/src/main.js` from the project root, as `npm start` runs it; resolves once /health answers 200. */
async function startGateway(env: Record<string, string>): Promise<Gateway> {
  const child = spawn(process.execPath, [GATEWAY_MAIN], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stdout!.resume();
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const gateway: Gateway = {
    child,
    url: `http://127.0.0.1:${env.PORT}`,
    stderr: () => stderr,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the gateway exited with ${child.exitCode}: ${stderr}`);
    const health = await call(gateway.url, 'GET', '/health').catch(() => null);
    if (health?.status === 200 && stderr.includes('==== END ADMIN TOKEN')) return gateway;
    if (Date.now() > deadline) throw new Error(`the gateway did not start within 60 s: ${stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

interface BashResult {
  code: number | null;
  stderr: string;
}

/** Runs the script in its own process group, ended afterwards with what it left running (the upstream). */
async function runBash(scriptFile: string, cwd: string, extraEnv: Record<string, string>): Promise<BashResult> {
  const child = spawn('bash', [scriptFile], { cwd, detached: true, env: { PATH: process.env.PATH ?? '', HOME: cwd, ...extraEnv }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const killGroup = () => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // The group has already ended.
    }
  };
  const timer = setTimeout(killGroup, BASH_TIMEOUT_MS);
  const code = await new Promise<number | null>((resolve) => child.once('exit', (exitCode) => resolve(exitCode)));
  clearTimeout(timer);
  killGroup();
  return { code, stderr };
}

function failedRun(result: BashResult, steps: ExampleStep[], outputDir: string): string {
  const currentFile = path.join(outputDir, 'current');
  const current = fs.existsSync(currentFile) ? Number(fs.readFileSync(currentFile, 'utf8').trim()) : -1;
  const step = steps[current];
  const outputFile = path.join(outputDir, `${current}.out`);
  const output = fs.existsSync(outputFile) ? fs.readFileSync(outputFile, 'utf8') : '';
  return `${step?.where ?? 'before the first step'}: the example failed (bash exit ${result.code})\n$ ${step?.command ?? ''}\n${output.slice(0, 3000)}\n${result.stderr.slice(-3000)}`;
}

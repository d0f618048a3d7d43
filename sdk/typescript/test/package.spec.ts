import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import * as source from '../src';
import { SdkGateway } from './support/sdk-gateway';

/**
 * The SDK as a user gets it (README, "Install"): `npm pack`ed, unpacked into a project of its
 * own, then loaded with require() and with import, type-checked from TypeScript in both module
 * systems, and the README's example run against a gateway with the demo policies
 * (config/policies.yaml), so an example that no longer compiles or says the wrong thing fails.
 * The tarball's dependencies (@grpc/*) resolve from the repository's node_modules: the test
 * stays offline.
 */

const run = promisify(execFile);
const SDK_ROOT = path.resolve(__dirname, '..');
const REPO_ROOT = path.resolve(SDK_ROOT, '..', '..');
const TSC = require.resolve('typescript/bin/tsc');
const NOTES = 'Buy milk; call Ada about the Q3 report.\n';

let scratch: string;
let project: string;
let packedFiles: string[];
let typecheck: { code: number; stdout: string; stderr: string };

/** The README's example: the ```ts block under "## Guarding a tool call". */
function readmeExample(): string {
  const readme = fs.readFileSync(path.join(SDK_ROOT, 'README.md'), 'utf8');
  const section = readme.split('\n## ').find((part) => part.startsWith('Guarding a tool call'));
  const block = /```ts\n([\s\S]*?)```/.exec(section ?? '');
  if (block === null) throw new Error('sdk/typescript/README.md has no ```ts block under "## Guarding a tool call"');
  return block[1];
}

/** `code` with `pattern` replaced; fails when the README no longer has what the test substitutes. */
function substituted(code: string, pattern: RegExp, replacement: string): string {
  if (!pattern.test(code)) throw new Error(`the README example no longer matches ${pattern}: update this test with it`);
  return code.replace(pattern, replacement);
}

async function node(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, args, { cwd: project, env: { PATH: process.env.PATH ?? '', ...env }, timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof failed.code === 'number' ? failed.code : 1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? String(error) };
  }
}

beforeAll(async () => {
  if (!fs.existsSync(path.join(SDK_ROOT, 'dist', 'index.js'))) throw new Error('sdk/typescript/dist is missing: run `npm run build` at the repository root first');
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'agentgov-sdk-pack-'));
  const packed = await run('npm', ['pack', '--json', '--pack-destination', scratch], { cwd: SDK_ROOT });
  const [tarball] = JSON.parse(packed.stdout) as Array<{ filename: string; files: Array<{ path: string }> }>;
  packedFiles = tarball.files.map((file) => file.path);

  project = path.join(scratch, 'agent');
  const installed = path.join(project, 'node_modules', '@agentgov', 'sdk');
  fs.mkdirSync(installed, { recursive: true });
  await run('tar', ['xzf', path.join(scratch, tarball.filename), '-C', installed, '--strip-components=1']);
  for (const scope of ['@grpc', '@types']) fs.symlinkSync(path.join(REPO_ROOT, 'node_modules', scope), path.join(project, 'node_modules', scope));
  fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'agent', private: true }));

  fs.writeFileSync(path.join(project, 'required.cjs'), "const sdk = require('@agentgov/sdk');\nconsole.log(JSON.stringify(Object.keys(sdk).sort()));\n");
  fs.writeFileSync(
    path.join(project, 'imported.mjs'),
    [
      "import * as sdk from '@agentgov/sdk';",
      "import { GovernanceClient, PolicyDeniedError } from '@agentgov/sdk';",
      "import { createRequire } from 'node:module';",
      "const required = createRequire(import.meta.url)('@agentgov/sdk');",
      'console.log(JSON.stringify({ names: Object.keys(sdk).sort(), sameClasses: GovernanceClient === required.GovernanceClient && PolicyDeniedError === required.PolicyDeniedError }));',
      '',
    ].join('\n'),
  );
  fs.writeFileSync(path.join(project, 'typed.mts'), "import { GovernanceClient, type CheckResult } from '@agentgov/sdk';\nexport const create: (url: string) => Promise<GovernanceClient> = (gatewayUrl) => GovernanceClient.create({ gatewayUrl, apiKey: 'k', agentId: 'a' });\nexport type Answer = CheckResult['decision'];\n");
  fs.writeFileSync(path.join(project, 'typed.cts'), "import { GovernanceClient, type CheckResult } from '@agentgov/sdk';\nexport const create: (url: string) => Promise<GovernanceClient> = (gatewayUrl) => GovernanceClient.create({ gatewayUrl, apiKey: 'k', agentId: 'a' });\nexport type Answer = CheckResult['via'];\n");
  fs.writeFileSync(path.join(project, 'example.mts'), readmeExample());
  fs.writeFileSync(path.join(project, 'notes.txt'), NOTES);

  // What an application's `tsc` does with the README's example and the two module systems.
  typecheck = await node([TSC, '--strict', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022', '--types', 'node', '--outDir', 'out', 'typed.mts', 'typed.cts', 'example.mts']);
}, 180_000);

afterAll(() => {
  if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
});

describe('the packed SDK', () => {
  it('holds the CommonJS build, the ES module entry and the types of both', () => {
    expect(packedFiles).toEqual(expect.arrayContaining(['package.json', 'README.md', 'dist/index.js', 'dist/index.d.ts', 'esm/index.mjs', 'esm/index.d.mts']));
    expect(packedFiles.filter((file) => !file.startsWith('dist/') && !file.startsWith('esm/')).sort()).toEqual(['LICENSE', 'README.md', 'package.json']);
  });

  it('carries its LICENSE and names it as its license, the same text and version as the Python and .NET packages', () => {
    const installed = path.join(project, 'node_modules', '@agentgov', 'sdk');
    const manifest = JSON.parse(fs.readFileSync(path.join(installed, 'package.json'), 'utf8')) as { license: string; version: string };
    expect(manifest.license).toBe('SEE LICENSE IN LICENSE');
    const license = fs.readFileSync(path.join(installed, 'LICENSE'), 'utf8');
    expect(license).toMatch(/All rights reserved\.[\s\S]*grants no license/);
    for (const other of ['python', 'dotnet']) expect(fs.readFileSync(path.join(REPO_ROOT, 'sdk', other, 'LICENSE'), 'utf8')).toBe(license);
    const pythonVersion = /^version = "([^"]+)"$/m.exec(fs.readFileSync(path.join(REPO_ROOT, 'sdk', 'python', 'pyproject.toml'), 'utf8'))?.[1];
    const dotnetVersion = /<Version>([^<]+)<\/Version>/.exec(fs.readFileSync(path.join(REPO_ROOT, 'sdk', 'dotnet', 'Directory.Build.props'), 'utf8'))?.[1];
    expect({ python: pythonVersion, dotnet: dotnetVersion }).toEqual({ python: manifest.version, dotnet: manifest.version });
  });

  it('loads with require() and with import, exporting what src/index.ts exports, one copy of each class', async () => {
    const exported = Object.keys(source).sort();
    const required = await node(['required.cjs']);
    expect(required).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(required.stdout)).toEqual(exported);
    const imported = await node(['imported.mjs']);
    expect(imported).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(imported.stdout)).toEqual({ names: exported, sameClasses: true });
  });

  it("type-checks from TypeScript as an ES module and as CommonJS, and so does the README's example", () => {
    expect(typecheck).toEqual({ code: 0, stdout: '', stderr: '' });
  });
});

describe("the README's example", () => {
  let gateway: SdkGateway;

  beforeAll(async () => {
    gateway = await SdkGateway.start({ POLICIES_FILE: path.join(REPO_ROOT, 'config', 'policies.yaml') });
  }, 120_000);
  afterAll(() => gateway?.stop());

  it('runs against a gateway with the demo policies and prints what the README says', async () => {
    const agentId = await gateway.createAgent('readme-example');
    const compiled = path.join(project, 'out', 'example.mjs');
    let code = fs.readFileSync(compiled, 'utf8');
    code = substituted(code, /gatewayUrl: '[^']*',/, `gatewayUrl: '${gateway.url}', grpcAddress: '127.0.0.1:${gateway.grpcPort}',`);
    code = substituted(code, /agentId: '[^']*'/, `agentId: '${agentId}'`);
    fs.writeFileSync(compiled, code);

    const ran = await node([compiled], { AGENTGOV_API_KEY: gateway.apiKey, TMPDIR: scratch });

    expect(ran).toMatchObject({ code: 0, stderr: '' });
    expect(ran.stdout.split('\n')).toEqual([
      NOTES.trimEnd(),
      '',
      'not allowed: Access to system files blocked (file-plugin-reads)',
      'skipped: Mail to personal or unknown domains is blocked',
      '',
    ]);
    const outcomes = (await gateway.auditEntries(`agentId=${agentId}&source=check`, (found) => found.filter((entry) => entry.kind === 'outcome').length >= 2)).filter(
      (entry) => entry.kind === 'outcome',
    );
    expect(outcomes.map((entry) => [entry.action, entry.reason]).sort()).toEqual([
      ['CrmPlugin.GetCustomer', 'returned object of 2 keys'],
      ['FilePlugin.ReadFile', `returned string of ${NOTES.length} characters`],
    ]);
  }, 120_000);
});

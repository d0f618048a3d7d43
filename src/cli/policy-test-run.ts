import fs from 'node:fs';
import path from 'node:path';
import { compilePolicies } from '../core/policy-engine/compile-policies';
import { formatPolicyError, PolicyLoadError } from '../core/policy-engine/errors';
import { loadPolicyFile } from '../core/policy-engine/loader';
import { loadPolicyTests, PolicyTestResult, runPolicyTests } from '../core/policy-engine/policy-tests';
import type { PolicyDefinition } from '../core/policy-engine/types';

/** Exit statuses of `ags policy test` (docs/cli.md): CI tells a failed test from a run that never happened. */
export const TEST_EXIT = { passed: 0, failed: 1, couldNotRun: 2 } as const;

/** The results of one test file, against the policies it names or the ones beside it. */
export interface SuiteRun {
  file: string;
  policyFiles: string[];
  results: PolicyTestResult[];
  ms: number;
}

/** Why the tests could not run: every problem, each as `file:line:column: message`. */
export class TestRunError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join('\n'));
  }
}

const TEST_FILE = /\.test\.ya?ml$/;
const POLICY_FILE = /\.(ya?ml|json)$/;
/** Directories deeper than this are not searched: a link loop must not run forever. */
const MAX_DEPTH = 16;

/**
 * Runs every `*.test.yaml` under `target` (a directory, searched recursively, or one test file)
 * against its policies with the engine alone: no gateway, no database. Throws TestRunError when
 * a file cannot be read or does not parse, or there is no test file.
 */
export async function runTestFiles(target: string): Promise<SuiteRun[]> {
  const files = testFilesUnder(target);
  if (files.length === 0) throw new TestRunError([`${target}: no *.test.yaml files`]);
  const problems: string[] = [];
  const runs: SuiteRun[] = [];
  for (const file of files) {
    try {
      runs.push(await runOne(file));
    } catch (error) {
      if (!(error instanceof TestRunError)) throw error;
      problems.push(...error.problems);
    }
  }
  if (problems.length > 0) throw new TestRunError(problems);
  return runs;
}

async function runOne(file: string): Promise<SuiteRun> {
  const started = performance.now();
  const suite = guarded(() => loadPolicyTests(read(file), file));
  const policyFiles = suite.policyFiles.length > 0 ? suite.policyFiles.map((name) => path.join(path.dirname(file), name)) : policyFilesBeside(file);
  if (policyFiles.length === 0) throw new TestRunError([`${file}: no policy files beside it (name them with 'policies:')`]);
  const definitions: PolicyDefinition[] = [];
  const problems: string[] = [];
  for (const policyFile of policyFiles) {
    try {
      const source = read(policyFile);
      if (source.trim() !== '') definitions.push(...guarded(() => loadPolicyFile(source, policyFile)));
    } catch (error) {
      if (!(error instanceof TestRunError)) throw error;
      problems.push(...error.problems);
    }
  }
  if (problems.length > 0) throw new TestRunError(problems);
  const set = guarded(() => compilePolicies(definitions, { namespace: 'test', file: policyFiles.join(', ') }));
  const results = await runPolicyTests(suite.tests, set);
  return { file, policyFiles, results, ms: performance.now() - started };
}

function guarded<T>(load: () => T): T {
  try {
    return load();
  } catch (error) {
    if (error instanceof PolicyLoadError) throw new TestRunError(error.errors.map(formatPolicyError));
    throw error;
  }
}

function read(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    throw new TestRunError([`${file}: cannot read`]);
  }
}

function testFilesUnder(target: string): string[] {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(target);
  } catch {
    throw new TestRunError([`${target}: no such file or directory`]);
  }
  if (stat.isFile()) {
    if (!TEST_FILE.test(target)) throw new TestRunError([`${target}: not a *.test.yaml file (to decide one input against a policies file, give --input)`]);
    return [target];
  }
  const found: string[] = [];
  const walk = (dir: string, depth: number): void => {
    if (depth > MAX_DEPTH) return;
    for (const entry of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory() && !entry.name.startsWith('.') && entry.name !== 'node_modules') walk(full, depth + 1);
      else if (entry.isFile() && TEST_FILE.test(entry.name)) found.push(full);
    }
  };
  walk(target, 0);
  return found;
}

/** The policy files in a test file's directory: every YAML or JSON file that is not itself a test file. */
function policyFilesBeside(file: string): string[] {
  const dir = path.dirname(file);
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isFile() && POLICY_FILE.test(entry.name) && !TEST_FILE.test(entry.name))
    .map((entry) => path.join(dir, entry.name))
    .sort();
}

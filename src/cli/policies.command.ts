import fs from 'node:fs';
import { Option, SubCommand } from 'nest-commander';
import { completeInput } from '../core/decision/decision-input';
import { compilePolicies } from '../core/policy-engine/compile-policies';
import { formatPolicyError, PolicyLoadError } from '../core/policy-engine/errors';
import { loadPolicyFile } from '../core/policy-engine/loader';
import { SlidingWindowLimiter } from '../core/policy-engine/sliding-window-limiter';
import type { PolicyDefinition } from '../core/policy-engine/types';
import { CliCommand, CommandGroup } from './cli-command';
import { BOOTSTRAP_ORG_ID } from '../gateway/organizations/organizations.service';
import { PoliciesService } from '../gateway/policies/policies.service';
import { CliError, fail, printFields } from './cli-output';
import { junitReport } from './junit-report';
import { CanaryCommandGroup } from './canary.command';
import { runTestFiles, SuiteRun, TEST_EXIT, TestRunError } from './policy-test-run';

/** Reads and validates a policies file; reports every error as `file:line:column: …`. */
function loadFile(file: string): PolicyDefinition[] {
  let source: string;
  try {
    source = fs.readFileSync(file, 'utf8');
  } catch {
    throw new CliError(`cannot read ${file}`);
  }
  try {
    return source.trim() === '' ? [] : loadPolicyFile(source, file);
  } catch (error) {
    if (!(error instanceof PolicyLoadError)) throw error;
    throw new CliError(`${error.errors.length} error(s):\n${error.errors.map(formatPolicyError).join('\n')}`);
  }
}

async function explainOne(file: string, input: Record<string, unknown>): Promise<void> {
  try {
    const set = compilePolicies(loadFile(file), { namespace: 'cli' });
    const explanation = await set.explain(completeInput(input, 'cli'), { limiter: new SlidingWindowLimiter(), nowMs: Date.now() });
    const { effect, ...decision } = explanation.decision;
    process.stdout.write(`${JSON.stringify({ decision: effect, ...decision, trace: explanation.trace }, null, 2)}\n`);
  } catch (error) {
    fail(error);
  }
}

/** One line a test, `PASS`/`FAIL`, each failure with where the test is and what decided instead; then the totals. */
function report(runs: readonly SuiteRun[]): void {
  let passed = 0;
  let failed = 0;
  for (const run of runs) {
    for (const result of run.results) {
      if (result.passed) passed++;
      else failed++;
      const where = `${run.file}:${result.test.line}:${result.test.column}`;
      process.stdout.write(result.passed ? `PASS ${where} ${result.test.name}\n` : `FAIL ${where} ${result.test.name}: ${result.failure}\n`);
    }
  }
  process.stdout.write(`${passed + failed} tests, ${passed} passed, ${failed} failed (${runs.length} file${runs.length === 1 ? '' : 's'})\n`);
}

function writeJunit(file: string, runs: readonly SuiteRun[]): void {
  try {
    fs.writeFileSync(file, junitReport(runs));
  } catch (error) {
    throw new CliError(`cannot write ${file}: ${(error as Error).message}`);
  }
}

@SubCommand({ name: 'validate', arguments: '<file>', description: 'Check a policies file: every error with its line and column; exit 1 if any' })
export class PoliciesValidateCommand extends CliCommand {
  async run([file]: string[]): Promise<void> {
    try {
      const policies = loadFile(file);
      process.stdout.write(`ok: ${policies.length} policies (${policies.map((policy) => policy.name).join(', ')})\n`);
    } catch (error) {
      fail(error);
    }
  }
}

@SubCommand({
  name: 'test',
  arguments: '<path>',
  description: 'Run the *.test.yaml files under a directory (or one test file) against their policy files; with --input, decide one input against a policies file and print the trace',
})
export class PoliciesTestCommand extends CliCommand {
  // A usage error is a run that never happened: CI must not read it as a failed test.
  override setCommand(command: Parameters<CliCommand['setCommand']>[0]): this {
    super.setCommand(command);
    command.exitOverride((error) => process.exit(error.exitCode === 0 ? 0 : TEST_EXIT.couldNotRun));
    return this;
  }

  async run([target]: string[], options: { input?: Record<string, unknown>; junit?: string }): Promise<void> {
    if (options.input !== undefined) return explainOne(target, options.input);
    try {
      const runs = await runTestFiles(target);
      report(runs);
      if (options.junit !== undefined) writeJunit(options.junit, runs);
      process.exitCode = runs.some((run) => run.results.some((result) => !result.passed)) ? TEST_EXIT.failed : TEST_EXIT.passed;
    } catch (error) {
      if (!(error instanceof TestRunError || error instanceof CliError)) throw error;
      process.stderr.write(`error: could not run the tests:\n${error.message}\n`);
      process.exitCode = TEST_EXIT.couldNotRun;
    }
  }

  @Option({ flags: '--junit <file>', description: 'Also write the results as JUnit XML to this file (for CI)' })
  parseJunit(value: string): string {
    return value;
  }

  @Option({ flags: '--input <json>', description: 'Decision input as JSON, e.g. \'{"agent":{"trust_tier":"verified"},"action":"write:orders"}\'' })
  parseInput(value: string): Record<string, unknown> {
    let input: unknown;
    try {
      input = JSON.parse(value) as unknown;
    } catch {
      throw new CliError('--input must be JSON');
    }
    // The decision input is an object (agent, action, args, ...): anything else would be decided
    // as an empty input, and its answer taken for the one asked about.
    if (typeof input !== 'object' || input === null || Array.isArray(input)) throw new CliError('--input must be a JSON object, e.g. {"action":"read:x"}');
    return input as Record<string, unknown>;
  }
}

@SubCommand({ name: 'promote', arguments: '<name>', description: 'Put a shadow policy (mode: shadow) in force; refused when stored policy tests fail, unless --force' })
export class PoliciesPromoteCommand extends CliCommand {
  constructor(private readonly policies: PoliciesService) {
    super();
  }

  async run([name]: string[], options: { org?: string; force?: boolean }): Promise<void> {
    try {
      const policy = await this.policies.promote({ orgId: options.org ?? BOOTSTRAP_ORG_ID, tokenId: 'cli' }, name, options.force === true);
      printFields({ name: policy.name, mode: policy.mode, version: policy.version });
    } catch (error) {
      fail(error);
    }
  }

  @Option({ flags: '--org <id>', description: 'Organization (default: the bootstrap organization)' })
  parseOrg(value: string): string {
    return value;
  }

  @Option({ flags: '--force', description: 'Promote although stored policy tests fail (audited)' })
  parseForce(): boolean {
    return true;
  }
}

const POLICIES_GROUP = { name: 'policies', aliases: ['policy'], description: 'Check, test and try policies files (no database needed); promote shadow policies; canary rollouts' };

@SubCommand({ ...POLICIES_GROUP, subCommands: [PoliciesValidateCommand, PoliciesTestCommand, PoliciesPromoteCommand, CanaryCommandGroup] })
export class PoliciesCommand extends CommandGroup {}

/** The same group where there is no database (OfflineCliModule): the commands on files only. */
@SubCommand({ ...POLICIES_GROUP, subCommands: [PoliciesValidateCommand, PoliciesTestCommand] })
export class OfflinePoliciesCommand extends CommandGroup {}

import fs from 'node:fs';
import { Option, SubCommand } from 'nest-commander';
import { completeInput } from '../decisions/decision-input';
import { compilePolicies } from '../policy-engine/compile-policies';
import { formatPolicyError, PolicyLoadError } from '../policy-engine/errors';
import { loadPolicyFile } from '../policy-engine/loader';
import { SlidingWindowLimiter } from '../policy-engine/sliding-window-limiter';
import type { PolicyDefinition } from '../policy-engine/types';
import { CliCommand, CommandGroup } from './cli-command';
import { CliError, fail } from './cli-output';

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

@SubCommand({ name: 'test', arguments: '<file>', description: 'Decide one input against a policies file and print the decision and the trace of every rule tried' })
export class PoliciesTestCommand extends CliCommand {
  async run([file]: string[], options: { input: Record<string, unknown> }): Promise<void> {
    try {
      const set = compilePolicies(loadFile(file), { namespace: 'cli' });
      const explanation = await set.explain(completeInput(options.input, 'cli'), { limiter: new SlidingWindowLimiter(), nowMs: Date.now() });
      const { effect, ...decision } = explanation.decision;
      process.stdout.write(`${JSON.stringify({ decision: effect, ...decision, trace: explanation.trace }, null, 2)}\n`);
    } catch (error) {
      fail(error);
    }
  }

  @Option({ flags: '--input <json>', description: 'Decision input as JSON, e.g. \'{"agent":{"trust_tier":"verified"},"action":"write:orders"}\'', required: true })
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

@SubCommand({ name: 'policies', description: 'Check and try policies files (no database needed)', subCommands: [PoliciesValidateCommand, PoliciesTestCommand] })
export class PoliciesCommand extends CommandGroup {}

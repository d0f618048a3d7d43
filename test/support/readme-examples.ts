/**
 * Turns the shell examples of README.md and docs/*.md into one bash script, so that a test can
 * run them as a reader would and check what they say they answer.
 *
 * The conventions the documents follow (README.md "Five-minute walk-through" states them):
 * - Every ```sh block of a run section is run, in order, in one bash session (`set -euo
 *   pipefail`): variables set by one block are there for the next ones.
 * - A command is a line, continued while a line ends with `\`.
 * - `# → text` lines after a command say what its output contains: fragments separated by `…`
 *   must all appear in the output, in that order (a command's `# →` lines are joined by `…`).
 * - A line `NAME=<what to paste>` is a value the reader pastes (the admin token); the test
 *   supplies it.
 * - A line `[VAR=value ...] npm start` starts the gateway; the test starts it itself (see
 *   readme.e2e-spec.ts), with those variables.
 */
import fs from 'node:fs';
import path from 'node:path';

export interface ShellBlock {
  /** Document and line of the block's first line, for messages. */
  where: string;
  lines: Array<{ text: string; line: number }>;
}

/** One command of a block, with what the document says its output contains. */
export interface ExampleStep {
  where: string;
  command: string;
  expectations: string[];
}

/** The gateway start a document asks for: `[VAR=value ...] npm start`. */
export interface GatewayStart {
  where: string;
  env: Record<string, string>;
}

export interface RunnableExamples {
  /** Steps per block, in document order. */
  blocks: ExampleStep[][];
  gatewayStarts: GatewayStart[];
  /** Names of the values the reader pastes (`NAME=<…>`), in order. */
  pasted: string[];
}

const EXPECTATION = /^#\s*→\s?(.*)$/;
const PASTED_VALUE = /^(?:export\s+)?([A-Z_][A-Z0-9_]*)=<[^>]*>\s*$/;
const NPM_START = /^((?:[A-Z_][A-Z0-9_]*=\S*\s+)*)npm start\s*$/;

/**
 * The ```sh blocks of `file` (relative to `root`); with `section`, only those under the
 * `## section` heading, up to the next `## ` heading. Throws when the section is missing.
 */
export function shellBlocks(root: string, file: string, section?: string): ShellBlock[] {
  const lines = fs.readFileSync(path.join(root, file), 'utf8').split('\n');
  let first = 0;
  let last = lines.length;
  if (section !== undefined) {
    first = lines.findIndex((line) => line.trim() === `## ${section}`);
    if (first < 0) throw new Error(`${file} has no "## ${section}" section`);
    const next = lines.findIndex((line, index) => index > first && line.startsWith('## '));
    last = next < 0 ? lines.length : next;
  }
  const blocks: ShellBlock[] = [];
  let open: ShellBlock | null = null;
  for (let index = first; index < last; index++) {
    const text = lines[index];
    if (open === null) {
      if (text.trim() === '```sh') open = { where: `${file}:${index + 2}`, lines: [] };
      continue;
    }
    if (text.trim().startsWith('```')) {
      blocks.push(open);
      open = null;
      continue;
    }
    open.lines.push({ text, line: index + 1 });
  }
  if (open !== null) throw new Error(`${open.where}: the block is not closed`);
  return blocks;
}

/** Splits blocks into commands with their expectations, and picks out the lines the test supplies. */
export function runnableExamples(files: Array<{ file: string; blocks: ShellBlock[] }>): RunnableExamples {
  const result: RunnableExamples = { blocks: [], gatewayStarts: [], pasted: [] };
  for (const { file, blocks } of files) {
    for (const block of blocks) {
      const steps: ExampleStep[] = [];
      let continued: ExampleStep | null = null;
      for (const { text, line } of block.lines) {
        const where = `${file}:${line}`;
        const trimmed = text.trim();
        if (continued !== null) {
          continued.command += `\n${text}`;
          if (!trimmed.endsWith('\\')) continued = null;
          continue;
        }
        const expectation = EXPECTATION.exec(trimmed);
        if (expectation !== null) {
          const previous = steps[steps.length - 1];
          if (previous === undefined) throw new Error(`${where}: "# →" with no command before it in its block`);
          previous.expectations.push(expectation[1]);
          continue;
        }
        if (trimmed === '' || trimmed.startsWith('#')) continue;
        const start = NPM_START.exec(trimmed);
        if (start !== null) {
          result.gatewayStarts.push({ where, env: assignments(start[1]) });
          continue;
        }
        const pasted = PASTED_VALUE.exec(trimmed);
        if (pasted !== null) {
          result.pasted.push(pasted[1]);
          steps.push({ where, command: `${pasted[1]}="$READMETEST_PASTED_${pasted[1]}"`, expectations: [] });
          continue;
        }
        const step: ExampleStep = { where, command: text, expectations: [] };
        steps.push(step);
        if (trimmed.endsWith('\\')) continued = step;
      }
      if (continued !== null) throw new Error(`${continued.where}: the command's last line ends with "\\"`);
      result.blocks.push(steps);
    }
  }
  return result;
}

function assignments(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const pair of text.trim().split(/\s+/).filter((item) => item !== '')) {
    const at = pair.indexOf('=');
    env[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return env;
}

/**
 * The bash script running every step, each one's output in `<outputDir>/<index>.out` and its
 * index in `<outputDir>/current` before it starts. `readme_pace` (defined by the caller's
 * prelude) runs between blocks.
 */
export function bashScript(examples: RunnableExamples, prelude: string, outputDir: string): { script: string; steps: ExampleStep[] } {
  const steps: ExampleStep[] = [];
  const parts = ['set -euo pipefail', prelude];
  examples.blocks.forEach((block, blockIndex) => {
    if (blockIndex > 0) parts.push('readme_pace');
    for (const step of block) {
      const index = steps.push(step) - 1;
      parts.push(`echo ${index} > "${outputDir}/current"`, `{ ${step.command}\n} > "${outputDir}/${index}.out" 2>&1`);
    }
  });
  return { script: `${parts.join('\n')}\n`, steps };
}

/**
 * What of `expectations` the output lacks: fragments (split on `…`) are looked for in order.
 * Returns null when every fragment is there.
 */
export function missingFragment(output: string, expectations: string[]): string | null {
  const fragments = expectations
    .join('…')
    .split('…')
    .map((fragment) => fragment.trim())
    .filter((fragment) => fragment !== '');
  let from = 0;
  for (const fragment of fragments) {
    const at = output.indexOf(fragment, from);
    if (at < 0) return fragment;
    from = at + fragment.length;
  }
  return null;
}

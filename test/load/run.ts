import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CaseReport, FAULT_CASES, runCase } from './fault-cases';
import { loadConfig } from './load-config';
import { caseLine, failuresOf, inconclusiveOf, summaryTable } from './load-report';
import { LoadStack, repositoryRoot } from './load-stack';
import { NotReadyInTime } from './service-process';

/**
 * `npm run test:load` (docs/load-suite.md): the load and fault suite. Exit status:
 * 0 every case passed; 1 a case shows a wrong allow or a loss beyond the documented bound; 2 the
 * suite could not run to the end (a process exited, a command failed); 3 inconclusive, the
 * machine too slow (a process not answering within LOAD_START_TIMEOUT_S, a trail not settled
 * within LOAD_SETTLE_TIMEOUT_S).
 */

const EXIT_GATE_FAILED = 1;
const EXIT_INCOMPLETE = 2;
const EXIT_INCONCLUSIVE = 3;

function say(line: string): void {
  process.stdout.write(`[load ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
}

async function main(): Promise<number> {
  const config = loadConfig(process.env);
  const resultsDir = path.join(repositoryRoot(), 'test/load/results');
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const logDir = path.join(resultsDir, `${stamp}-logs`);
  fs.mkdirSync(logDir, { recursive: true });
  const started = Date.now();
  say(`cases ${config.cases.join(',')}; ${config.ratePerTarget} req/s per target; logs in ${path.relative(process.cwd(), logDir)}`);

  let stack: LoadStack | null = null;
  const interrupt = () => {
    say('interrupted: stopping what the suite started');
    void (stack?.destroy() ?? Promise.resolve()).finally(() => process.exit(130));
  };
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);

  const cases: CaseReport[] = [];
  let incomplete: string | null = null;
  let tooSlow = false;
  let chain: Record<string, unknown> | null = null;
  let fleet: Awaited<ReturnType<LoadStack['sidecarFleet']>> = null;
  try {
    stack = await LoadStack.start(config, logDir, say);
    say(`stack up in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    for (const id of config.cases) {
      const faultCase = FAULT_CASES.find((candidate) => candidate.id === id)!;
      say(`case ${faultCase.title}`);
      const report = await runCase(stack, faultCase);
      cases.push(report);
      say(caseLine(report));
    }
    chain = await stack.verifyChain(180_000);
    fleet = await stack.sidecarFleet();
  } catch (error) {
    incomplete = error instanceof Error ? (error.stack ?? error.message) : String(error);
    tooSlow = error instanceof NotReadyInTime;
    say(`the suite could not run to the end: ${incomplete}`);
  } finally {
    await stack?.destroy().catch((error: unknown) => say(`teardown: ${String(error)}`));
  }

  const failures = failuresOf(cases);
  const inconclusive = inconclusiveOf(cases);
  const report = {
    startedAt: new Date(started).toISOString(),
    durationSeconds: (Date.now() - started) / 1000,
    machine: { cpus: os.cpus().length, loadAverage: os.loadavg(), node: process.version },
    config,
    passed: failures.length === 0 && inconclusive.length === 0 && incomplete === null,
    failures,
    inconclusive,
    incomplete,
    auditChain: chain,
    sidecarFleet: fleet,
    upstreamUntraced: stack?.upstream.untraced ?? null,
    cases,
  };
  const file = path.join(resultsDir, `${stamp}.json`);
  fs.writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);

  process.stdout.write(`\n${summaryTable(cases)}\n\n`);
  say(`audit chain: ${chain === null ? 'not verified' : JSON.stringify(chain)}; sidecar at the gateway: ${JSON.stringify(fleet)}`);
  say(`report: ${path.relative(process.cwd(), file)}; ${report.durationSeconds.toFixed(0)} s`);
  for (const failure of failures) say(`FAIL ${failure}`);
  for (const unjudged of inconclusive) say(`INCONCLUSIVE ${unjudged}`);
  if (failures.length > 0) return EXIT_GATE_FAILED;
  if (incomplete !== null) return tooSlow ? EXIT_INCONCLUSIVE : EXIT_INCOMPLETE;
  return inconclusive.length > 0 ? EXIT_INCONCLUSIVE : 0;
}

main().then(
  (status) => process.exit(status),
  (error: unknown) => {
    say(`load suite failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    process.exit(EXIT_INCOMPLETE);
  },
);

/**
 * Policy engine throughput: our compiled closures against a hand-written function with the same
 * rules (the reference) and against Cedar (wasm, pre-parsed policy set) on the subset Cedar can
 * express. Single-threaded, plain timers; `node dist/bench/policy.bench.js` runs it alone.
 *
 * The target is a ratio judged on alternating rounds: engine, reference, reference, engine, ...
 * BENCH_POLICY_ROUNDS rounds of BENCH_POLICY_ROUND_MS each, decisions/s summed over the rounds.
 * The machine's speed drifts by tens of percent within minutes, so two runs a few seconds apart
 * compare the drift as much as the code; alternating cancels most of it.
 */
import * as cedar from '@cedar-policy/cedar-wasm/nodejs';
import { compilePolicies } from '../src/policy-engine/compile-policies';
import { loadPolicyFile } from '../src/policy-engine/loader';
import type { PolicySet } from '../src/policy-engine/policy-set';
import { SlidingWindowLimiter } from '../src/policy-engine/sliding-window-limiter';
import type { Decision, DecisionInput, EvaluationEnv, Explanation, RateLimiter } from '../src/policy-engine/types';
import { BENCH_POLICIES_YAML, CEDAR_SUBSET, RATE_LIMIT_POLICY_YAML } from './fixtures/policy-bench-set';
import { CEDAR_POLICIES, toStatefulCedarRequest } from './fixtures/policy-cedar';
import { handwrittenDecide } from './fixtures/policy-handwritten';
import { makeInputPool } from './fixtures/policy-inputs';
import type { BenchReport, BenchRow, BenchTarget } from './report';

const POOL_SIZE = 1000;
const WARMUP_MS = 300;
const MEASURE_MS = 1000;
const CEDAR_MEASURE_MS = 1000;
const ROUNDS = positiveNumber('BENCH_POLICY_ROUNDS', 8);
const ROUND_MS = positiveNumber('BENCH_POLICY_ROUND_MS', 750);
/** The engine may take at most this many times the hand-written function's time per decision. */
const MAX_SLOWDOWN = 1.5;
const CEDAR_POLICY_SET_ID = 'policy-bench';

interface Timing {
  readonly opsPerSec: number;
  readonly ops: number;
  readonly seconds: number;
}

/** Runs `decide` over the pool, batch after batch, for about `durationMs`. */
function timeLoop<T>(pool: readonly T[], decide: (item: T) => number, durationMs: number): Timing {
  let ops = 0;
  let sink = 0;
  const start = process.hrtime.bigint();
  const deadline = start + BigInt(durationMs) * 1_000_000n;
  let now: bigint;
  do {
    for (let i = 0; i < pool.length; i++) sink += decide(pool[i]);
    ops += pool.length;
    now = process.hrtime.bigint();
  } while (now < deadline);
  const seconds = Number(now - start) / 1e9;
  if (sink < 0) console.log(sink); // keeps the results observable so nothing is optimised away
  return { opsPerSec: Math.round(ops / seconds), ops, seconds };
}

/** The same loop, awaiting every decision: what an asynchronous API costs per call. */
async function timeLoopAsync<T>(pool: readonly T[], decide: (item: T) => Promise<number>, durationMs: number): Promise<Timing> {
  let ops = 0;
  let sink = 0;
  const start = process.hrtime.bigint();
  const deadline = start + BigInt(durationMs) * 1_000_000n;
  let now: bigint;
  do {
    for (let i = 0; i < pool.length; i++) sink += await decide(pool[i]);
    ops += pool.length;
    now = process.hrtime.bigint();
  } while (now < deadline);
  const seconds = Number(now - start) / 1e9;
  if (sink < 0) console.log(sink);
  return { opsPerSec: Math.round(ops / seconds), ops, seconds };
}

async function measureAsync<T>(pool: readonly T[], decide: (item: T) => Promise<number>): Promise<Timing> {
  await timeLoopAsync(pool, decide, WARMUP_MS);
  return timeLoopAsync(pool, decide, MEASURE_MS);
}

interface Rounds {
  readonly engine: number[];
  readonly reference: number[];
}

/** ROUNDS rounds of ROUND_MS for each, alternating which goes first; both warmed up before. */
function alternate<T>(pool: readonly T[], engine: (item: T) => number, reference: (item: T) => number): Rounds {
  timeLoop(pool, engine, WARMUP_MS);
  timeLoop(pool, reference, WARMUP_MS);
  const rounds = { engine: [] as number[], reference: [] as number[] };
  for (let round = 0; round < ROUNDS; round++) {
    const order: Array<keyof Rounds> = round % 2 === 0 ? ['engine', 'reference'] : ['reference', 'engine'];
    for (const which of order) rounds[which].push(timeLoop(pool, which === 'engine' ? engine : reference, ROUND_MS).opsPerSec);
  }
  return rounds;
}

function sum(values: readonly number[]): number {
  return values.reduce((total, value) => total + value, 0);
}

/** One row per side of the alternating rounds: the mean of its rounds. */
function roundsRow(subject: string, opsPerRound: readonly number[], extra: Record<string, number | string>): BenchRow {
  return { subject, opsPerSec: Math.round(sum(opsPerRound) / opsPerRound.length), extra: { rounds: opsPerRound.length, roundMs: ROUND_MS, ...extra } };
}

function measure<T>(pool: readonly T[], decide: (item: T) => number, durationMs = MEASURE_MS): Timing {
  timeLoop(pool, decide, WARMUP_MS);
  return timeLoop(pool, decide, durationMs);
}

function row(subject: string, timing: Timing, extra?: Record<string, number | string>): BenchRow {
  return { subject, opsPerSec: timing.opsPerSec, extra: { decisions: timing.ops, seconds: Number(timing.seconds.toFixed(3)), ...extra } };
}

function decisionKey(decision: Decision): string {
  return `${decision.effect}|${decision.policy}|${decision.rule}`;
}

function syncDecision(set: PolicySet, input: DecisionInput, env: EvaluationEnv): Decision {
  const decision = set.evaluate(input, env);
  if (decision instanceof Promise) throw new Error('a synchronous limiter must keep evaluation synchronous');
  return decision;
}

function isDeny(decision: Decision | Promise<Decision>): number {
  return (decision as Decision).effect === 'deny' ? 1 : 0;
}

const neverCalled: RateLimiter = {
  hit: () => {
    throw new Error('no rate_limit in this set');
  },
  peek: () => 0,
};

/** The in-process limiter behind Promises, as the Redis limiter answers (without the network). */
function promising(limiter: RateLimiter): RateLimiter {
  return {
    hit: (key, limit, windowMs, nowMs) => Promise.resolve(limiter.hit(key, limit, windowMs, nowMs)),
    peek: (key, limit, windowMs, nowMs) => Promise.resolve(limiter.peek(key, limit, windowMs, nowMs)),
  };
}

function positiveNumber(name: string, fallback: number): number {
  const value = Number(process.env[name]);
  return Number.isFinite(value) && value > 0 ? value : fallback;
}

function cedarSetUp(): void {
  const parsed = cedar.preparsePolicySet(CEDAR_POLICY_SET_ID, { staticPolicies: CEDAR_POLICIES });
  if (parsed.type !== 'success') throw new Error(`Cedar rejected the policies: ${JSON.stringify(parsed.errors)}`);
}

function cedarDecision(call: cedar.StatefulAuthorizationCall): 'allow' | 'deny' | 'error' {
  const answer = cedar.statefulIsAuthorized(call);
  if (answer.type !== 'success' || answer.response.diagnostics.errors.length > 0) return 'error';
  return answer.response.decision;
}

/** The policy benchmark: rows for our engine, the hand-written reference, Cedar, and rate limiting. */
export async function runPolicyBench(): Promise<BenchReport> {
  const pool = makeInputPool(POOL_SIZE);
  const definitions = loadPolicyFile(BENCH_POLICIES_YAML, 'bench-policies.yaml');
  const set = compilePolicies(definitions, { namespace: 'org_bench' });
  const subset = compilePolicies(definitions.filter((policy) => CEDAR_SUBSET.includes(policy.name)), { namespace: 'org_bench' });
  const rated = compilePolicies([...definitions, ...loadPolicyFile(RATE_LIMIT_POLICY_YAML, 'rate.yaml')], { namespace: 'org_bench' });
  const env: EvaluationEnv = { limiter: neverCalled, nowMs: Date.now() };
  const ratedEnv: EvaluationEnv = { limiter: new SlidingWindowLimiter(), nowMs: Date.now() };

  const handwrittenMismatches = pool.filter((input) => decisionKey(syncDecision(set, input, env)) !== handwrittenDecide(input)).length;
  const denies = pool.filter((input) => syncDecision(set, input, env).effect === 'deny').length;
  const applicable = pool.map((input) => set.applicable(input));

  const engineDecide = (input: DecisionInput) => isDeny(set.evaluate(input, env));
  const rounds = alternate(pool, engineDecide, (input) => (handwrittenDecide(input).charCodeAt(0) === 100 ? 1 : 0));
  const indexes = pool.map((_, index) => index);
  const withApplicable = measure(indexes, (index) => isDeny(set.evaluate(pool[index], env, applicable[index])));
  const withRateLimit = measure(pool, (input) => isDeny(rated.evaluate(input, ratedEnv)));
  const explained = measure(pool, (input) => ((set.explain(input, env) as Explanation).decision.effect === 'deny' ? 1 : 0));
  const asyncEvaluate = async (input: DecisionInput) => set.evaluate(input, env);
  const awaited = await measureAsync(pool, async (input) => isDeny(await asyncEvaluate(input)));
  const promisedEnv: EvaluationEnv = { limiter: promising(new SlidingWindowLimiter()), nowMs: Date.now() };
  const withPromisedLimit = await measureAsync(pool, async (input) => isDeny(await rated.evaluate(input, promisedEnv)));

  cedarSetUp();
  const cedarCalls = pool.map((input) => toStatefulCedarRequest(input, CEDAR_POLICY_SET_ID));
  const cedarAnswers = cedarCalls.map(cedarDecision);
  const cedarErrors = cedarAnswers.filter((answer) => answer === 'error').length;
  const cedarMismatches = pool.filter((input, index) => syncDecision(subset, input, env).effect !== cedarAnswers[index]).length;
  const subsetDenies = pool.filter((input) => syncDecision(subset, input, env).effect === 'deny').length;
  const oursSubset = measure(pool, (input) => isDeny(subset.evaluate(input, env)));
  const cedarTiming = measure(cedarCalls, (call) => (cedarDecision(call) === 'deny' ? 1 : 0), CEDAR_MEASURE_MS);

  const slowdown = sum(rounds.reference) / sum(rounds.engine);
  const perRound = rounds.engine.map((ops, index) => (rounds.reference[index] / ops).toFixed(2)).join(', ');
  const engineMean = Math.round(sum(rounds.engine) / ROUNDS);
  const rows: BenchRow[] = [
    roundsRow('engine: 20 policies / 60 rules (match inline)', rounds.engine, { denies, allows: POOL_SIZE - denies }),
    roundsRow('hand-written JavaScript, same rules (reference)', rounds.reference, { 'handwritten/engine': Number(slowdown.toFixed(2)) }),
    row('engine: applicable() precomputed, evaluate(input, env, applicable)', withApplicable),
    row('engine: explain(input, env) (traced dry run, builds the Explanation)', explained, { 'engine/explain': Number((engineMean / explained.opsPerSec).toFixed(1)) }),
    row('engine, every decision awaited (as if evaluate were async)', awaited, { 'engine/awaited': Number((engineMean / awaited.opsPerSec).toFixed(2)) }),
    row('engine + rate_limit(per_agent) with in-process SlidingWindowLimiter', withRateLimit),
    row('engine + rate_limit(per_agent), limiter answering with Promises', withPromisedLimit, {
      'sync/promised': Number((withRateLimit.opsPerSec / withPromisedLimit.opsPerSec).toFixed(2)),
    }),
    row(`engine: Cedar-expressible subset (${CEDAR_SUBSET.length} policies)`, oursSubset, { denies: subsetDenies }),
    row('@cedar-policy/cedar-wasm statefulIsAuthorized, same subset', cedarTiming, {
      'engine/cedar': Number((oursSubset.opsPerSec / cedarTiming.opsPerSec).toFixed(1)),
      cedarVersion: cedar.getCedarVersion(),
    }),
  ];
  const targets: BenchTarget[] = [
    {
      description: `engine within ${MAX_SLOWDOWN}x of the hand-written function (handwritten/engine <= ${MAX_SLOWDOWN}, ${ROUNDS} alternating rounds summed)`,
      measured:
        `${ROUNDS} rounds of ${ROUND_MS} ms: ${sum(rounds.reference).toLocaleString('en-US')} / ${sum(rounds.engine).toLocaleString('en-US')} decisions/s summed = ${slowdown.toFixed(2)}x ` +
        `(rounds: ${perRound})`,
      pass: slowdown <= MAX_SLOWDOWN,
    },
    {
      description: 'same decisions as Cedar on every input of the Cedar-expressible subset',
      measured: `${cedarMismatches} mismatches, ${cedarErrors} Cedar errors over ${POOL_SIZE} inputs`,
      pass: cedarMismatches === 0 && cedarErrors === 0,
    },
    {
      description: 'same decisions (effect, policy, rule) as the hand-written function on every input',
      measured: `${handwrittenMismatches} mismatches over ${POOL_SIZE} inputs`,
      pass: handwrittenMismatches === 0,
    },
  ];
  return {
    name: 'policy',
    rows,
    targets,
    notes: [
      `Node ${process.version}; single thread; pool of ${POOL_SIZE} pre-built inputs; engine and reference: ${ROUNDS} alternating rounds of ${ROUND_MS} ms after ${WARMUP_MS} ms warm-up each, rows show their mean; other rows ${WARMUP_MS} ms warm-up, ${MEASURE_MS} ms timed (Cedar ${CEDAR_MEASURE_MS} ms).`,
      'The awaited rows price the sync-or-promise plumbing: evaluation as if it always went through a Promise (docs/architecture.md, Policy engine).',
      'Cedar requests are built before timing; only statefulIsAuthorized calls (policy set pre-parsed) are timed.',
      'The rate-limit row adds one per-agent limit on write:* that never trips during the run (one limiter hit per write).',
    ],
  };
}

if (require.main === module) {
  runPolicyBench()
    .then((report) => console.log(JSON.stringify(report, null, 2)))
    .catch((error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    });
}

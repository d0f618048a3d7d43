/**
 * Policy engine throughput: our compiled closures against a hand-written function with the same
 * rules (the reference) and against Cedar (wasm, pre-parsed policy set) on the subset Cedar can
 * express. Single-threaded, plain timers, one run; `node dist/bench/policy.bench.js` runs it alone.
 */
import * as cedar from '@cedar-policy/cedar-wasm/nodejs';
import { compilePolicies } from '../src/policy-engine/compile-policies';
import { loadPolicyFile } from '../src/policy-engine/loader';
import type { PolicySet } from '../src/policy-engine/policy-set';
import { SlidingWindowLimiter } from '../src/policy-engine/sliding-window-limiter';
import type { Decision, DecisionInput, EvaluationEnv, RateLimiter } from '../src/policy-engine/types';
import { BENCH_POLICIES_YAML, CEDAR_SUBSET, RATE_LIMIT_POLICY_YAML } from './fixtures/policy-bench-set';
import { CEDAR_POLICIES, toStatefulCedarRequest } from './fixtures/policy-cedar';
import { handwrittenDecide } from './fixtures/policy-handwritten';
import { makeInputPool } from './fixtures/policy-inputs';
import type { BenchReport, BenchRow, BenchTarget } from './report';

const POOL_SIZE = 1000;
const WARMUP_MS = 500;
const MEASURE_MS = 1500;
const CEDAR_MEASURE_MS = 1000;
const TARGET_OPS = 1_000_000;
const MAX_SLOWDOWN = 3;
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

  const ours = measure(pool, (input) => isDeny(set.evaluate(input, env)));
  const handwritten = measure(pool, (input) => (handwrittenDecide(input).charCodeAt(0) === 100 ? 1 : 0));
  const indexes = pool.map((_, index) => index);
  const withApplicable = measure(indexes, (index) => isDeny(set.evaluate(pool[index], env, applicable[index])));
  const withRateLimit = measure(pool, (input) => isDeny(rated.evaluate(input, ratedEnv)));

  cedarSetUp();
  const cedarCalls = pool.map((input) => toStatefulCedarRequest(input, CEDAR_POLICY_SET_ID));
  const cedarAnswers = cedarCalls.map(cedarDecision);
  const cedarErrors = cedarAnswers.filter((answer) => answer === 'error').length;
  const cedarMismatches = pool.filter((input, index) => syncDecision(subset, input, env).effect !== cedarAnswers[index]).length;
  const subsetDenies = pool.filter((input) => syncDecision(subset, input, env).effect === 'deny').length;
  const oursSubset = measure(pool, (input) => isDeny(subset.evaluate(input, env)));
  const cedarTiming = measure(cedarCalls, (call) => (cedarDecision(call) === 'deny' ? 1 : 0), CEDAR_MEASURE_MS);

  const slowdown = handwritten.opsPerSec / ours.opsPerSec;
  const rows: BenchRow[] = [
    row('engine: 20 policies / 60 rules (match inline)', ours, { denies, allows: POOL_SIZE - denies }),
    row('hand-written JavaScript, same rules (reference)', handwritten, { 'handwritten/engine': Number(slowdown.toFixed(2)) }),
    row('engine: applicable() precomputed, evaluate(input, env, applicable)', withApplicable),
    row('engine + rate_limit(per_agent) with in-process SlidingWindowLimiter', withRateLimit),
    row(`engine: Cedar-expressible subset (${CEDAR_SUBSET.length} policies)`, oursSubset, { denies: subsetDenies }),
    row('@cedar-policy/cedar-wasm statefulIsAuthorized, same subset', cedarTiming, {
      'engine/cedar': Number((oursSubset.opsPerSec / cedarTiming.opsPerSec).toFixed(1)),
      cedarVersion: cedar.getCedarVersion(),
    }),
  ];
  const targets: BenchTarget[] = [
    {
      description: `engine decides at least ${TARGET_OPS.toLocaleString('en-US')} decisions/s`,
      measured: `${ours.opsPerSec.toLocaleString('en-US')} decisions/s`,
      pass: ours.opsPerSec >= TARGET_OPS,
    },
    {
      description: `engine within ${MAX_SLOWDOWN}x of the hand-written function (handwritten/engine <= ${MAX_SLOWDOWN})`,
      measured: `${slowdown.toFixed(2)}x`,
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
      `Node ${process.version}; single thread; pool of ${POOL_SIZE} pre-built inputs; ${WARMUP_MS} ms warm-up, ${MEASURE_MS} ms timed per row (Cedar ${CEDAR_MEASURE_MS} ms).`,
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

/**
 * The load and fault suite's settings, all from the environment (docs/load-suite.md lists them):
 * durations in seconds, rates in requests a second. Every bad value is reported at once.
 */

export const CASE_IDS = ['steady', 'a', 'b', 'c1', 'c2', 'd', 'e', 'f', 'g'] as const;
export type CaseId = (typeof CASE_IDS)[number];

export interface LoadConfig {
  /** Paced requests a second sent to each of the three targets (two gateways, the sidecar). */
  ratePerTarget: number;
  /** Most requests in flight per target; a request due while all are busy is shed (counted, never sent). */
  concurrency: number;
  /** How long the upstream takes to answer: exchanges a kill can catch half-way. */
  upstreamDelayMs: number;
  /** A request with no answer after this long counts as unanswered. */
  requestTimeoutMs: number;
  /** Load before each fault, and after the fault is undone (and what it restarted is ready). */
  beforeS: number;
  afterS: number;
  steadyS: number;
  postgresStopS: number;
  redisStopS: number;
  gatewayAwayS: number;
  burstS: number;
  /** Malformed requests a second during the burst, over the three targets. */
  burstRate: number;
  /** Longest wait after a case for the audit trail to take every entry it will take. */
  settleTimeoutS: number;
  /** Longest wait for a gateway or the sidecar to answer /health after a start. */
  startTimeoutS: number;
  /** The gateways' AUDIT_FLUSH_MS, which the kill -9 bound is made of. */
  auditFlushMs: number;
  cases: CaseId[];
  /** LOAD_KEEP_OUTCOMES=1: every request of every case, with what the upstream and the trail hold of it, as JSON lines beside the logs. */
  keepOutcomes: boolean;
}

export function loadConfig(env: NodeJS.ProcessEnv): LoadConfig {
  const problems: string[] = [];
  const number = (name: string, fallback: number, min: number, max: number): number => {
    const text = env[name];
    if (text === undefined || text === '') return fallback;
    const value = Number(text);
    if (!Number.isFinite(value) || value < min || value > max) {
      problems.push(`${name}=${text}: expected a number from ${min} to ${max}`);
      return fallback;
    }
    return value;
  };
  const config: LoadConfig = {
    ratePerTarget: number('LOAD_RATE', 200, 1, 5000),
    concurrency: number('LOAD_CONCURRENCY', 64, 1, 1024),
    upstreamDelayMs: number('LOAD_UPSTREAM_DELAY_MS', 20, 0, 10000),
    requestTimeoutMs: number('LOAD_REQUEST_TIMEOUT_S', 10, 1, 120) * 1000,
    beforeS: number('LOAD_BEFORE_S', 3, 0, 600),
    afterS: number('LOAD_AFTER_S', 5, 1, 600),
    steadyS: number('LOAD_STEADY_S', 5, 1, 600),
    postgresStopS: number('LOAD_PG_STOP_S', 10, 0, 600),
    redisStopS: number('LOAD_REDIS_STOP_S', 5, 0, 600),
    gatewayAwayS: number('LOAD_GATEWAY_AWAY_S', 30, 0, 600),
    burstS: number('LOAD_BURST_S', 5, 1, 600),
    burstRate: number('LOAD_BURST_RATE', 600, 1, 10000),
    settleTimeoutS: number('LOAD_SETTLE_TIMEOUT_S', 60, 5, 1800),
    startTimeoutS: number('LOAD_START_TIMEOUT_S', 120, 10, 1800),
    auditFlushMs: number('LOAD_AUDIT_FLUSH_MS', 250, 1, 60000),
    cases: caseList(env.LOAD_CASES, problems),
    keepOutcomes: env.LOAD_KEEP_OUTCOMES === '1',
  };
  if (problems.length > 0) throw new Error(`load suite settings: ${problems.join('; ')}`);
  return config;
}

/** LOAD_CASES: a comma-separated subset of the cases (`steady,a,c`), all by default; always run in the suite's order. */
function caseList(text: string | undefined, problems: string[]): CaseId[] {
  if (text === undefined || text.trim() === '') return [...CASE_IDS];
  const asked = text.split(',').map((part) => part.trim());
  const unknown = asked.filter((id) => !(CASE_IDS as readonly string[]).includes(id));
  if (unknown.length > 0) problems.push(`LOAD_CASES: unknown ${unknown.join(', ')} (cases: ${CASE_IDS.join(', ')})`);
  return CASE_IDS.filter((id) => asked.includes(id));
}

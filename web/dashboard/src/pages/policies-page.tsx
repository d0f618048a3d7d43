import { useEffect, useState, type FormEvent } from 'react';
import { ErrorMessage } from '../components/error-message';
import { Field } from '../components/field';
import { LoadedView } from '../components/loaded-view';
import { SortableTable } from '../components/sortable-table';
import { useDashboard } from '../context';
import { count, dateTime, percent, relative } from '../format';
import { useLoad } from '../load';
import { Link, useRoute } from '../router';
import { GitSourceSection } from './policy-git-source';
import type { Agent, Backtest, Canary, CanaryCohort, Decision, PolicyDetail, PolicyList, PolicyStat, ShadowPolicyStat, Simulation, ValidationResult } from '../types';

const DRAFT_EXAMPLE = `name: orders-need-trust
match: { action: "write:orders*" }
rules:
  - name: untrusted-orders
    condition: agent.trust_tier < trusted
    action: deny
    reason: Orders need a trusted agent
`;

const PERIOD_MS: Record<string, number> = { '24h': 86_400_000, '7d': 7 * 86_400_000, '30d': 30 * 86_400_000 };

/** The policies in force (GET /admin/policies) and a lab to validate, simulate and backtest a draft (docs/policies.md). */
export function PoliciesPage() {
  const { api, period } = useDashboard();
  const route = useRoute();
  const policies = useLoad((signal) => api.get<PolicyList>('/admin/policies', undefined, signal), [api]);
  const stats = useLoad((signal) => api.get<{ policies: PolicyStat[] }>('/admin/analytics/policies', { period }, signal), [api, period]);
  const decided = new Map((stats.data?.policies ?? []).map((stat) => [stat.name, stat]));
  return (
    <>
      <h1>Policies</h1>
      <section className="card" aria-labelledby="policies-title">
        <div className="section-head">
          <h2 id="policies-title">In force</h2>
          {policies.data && <span className="muted">policy version {policies.data.version}</span>}
        </div>
        {stats.error && <ErrorMessage error={stats.error} title={`Could not load the policies' decisions of the last ${period}`} />}
        <LoadedView loaded={policies} what="the policies">
          {(data) => (
            <SortableTable
              caption="Policies in evaluation order"
              testId="policies"
              rows={data.policies.map((policy, order) => ({ ...policy, order }))}
              rowKey={(policy) => policy.name}
              initialSort={{ key: 'order', descending: false }}
              empty="No policies: every request is allowed."
              columns={[
                { key: 'order', label: '#', numeric: true, sortBy: (policy) => policy.order, render: (policy) => policy.order + 1 },
                { key: 'name', label: 'Policy', sortBy: (policy) => policy.name, render: (policy) => <Link to={`/policies/${encodeURIComponent(policy.name)}`}>{policy.name}</Link> },
                {
                  key: 'match',
                  label: 'Applies to',
                  render: (policy) =>
                    Object.entries(policy.match ?? {})
                      .map(([field, glob]) => `${field} ${glob}`)
                      .join(', ') || 'every request',
                },
                { key: 'rules', label: 'Rules', numeric: true, sortBy: (policy) => policy.rules.length, render: (policy) => policy.rules.length },
                { key: 'mode', label: 'Mode', sortBy: (policy) => policy.mode ?? 'enforce', render: (policy) => policy.mode ?? 'enforce' },
                { key: 'origin', label: 'Origin', sortBy: (policy) => policy.origin, render: (policy) => policy.origin },
                { key: 'updated', label: 'Changed', sortBy: (policy) => policy.updatedAt, render: (policy) => <time title={dateTime(policy.updatedAt)}>{relative(policy.updatedAt)}</time> },
                { key: 'decided', label: `Decisions (${period})`, numeric: true, sortBy: (policy) => decided.get(policy.name)?.triggered ?? 0, render: (policy) => count(decided.get(policy.name)?.triggered ?? 0) },
                { key: 'denied', label: 'Denied', numeric: true, sortBy: (policy) => decided.get(policy.name)?.denyRate ?? 0, render: (policy) => percent(decided.get(policy.name)?.denyRate ?? 0) },
              ]}
            />
          )}
        </LoadedView>
      </section>
      <GitSourceSection />
      <CanaryRollouts />
      <ShadowPolicies />
      <PolicyLab startFrom={route.query.get('draft')} />
    </>
  );
}

/**
 * Canary rollouts (GET /admin/canaries; docs/policies.md "Canary rollouts"): each new version
 * with both cohorts' rates, and the running one's promote and abort buttons.
 */
function CanaryRollouts() {
  const { api } = useDashboard();
  const canaries = useLoad((signal) => api.get<{ canaries: Canary[] }>('/admin/canaries', undefined, signal), [api]);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | null>(null);
  const step = (canary: Canary, how: 'promote' | 'abort') => {
    setBusy(true);
    setError(null);
    api.post(`/admin/canaries/${encodeURIComponent(canary.id)}/${how}`).then(
      () => {
        setBusy(false);
        canaries.reload();
      },
      (failure: Error) => {
        setBusy(false);
        setError(failure);
      },
    );
  };
  return (
    <section className="card" aria-labelledby="canaries-title">
      <h2 id="canaries-title">Canary rollouts</h2>
      <p className="muted">
        A new version of a policy in force for a share of the agents (or at labelled sidecars), compared with the rest; rolled back by itself when its deny rate exceeds theirs by the margin, promoted after its
        window otherwise. Start one with <code>ags policy canary start</code> or <code>POST /admin/canaries</code>.
      </p>
      {error && <ErrorMessage error={error} title="The step was refused" />}
      <LoadedView loaded={canaries} what="the canary rollouts">
        {(data) => (
          <SortableTable
            caption="Canary rollouts, newest first"
            testId="canaries"
            rows={data.canaries}
            rowKey={(canary) => canary.id}
            initialSort={{ key: 'started', descending: true }}
            empty="No canary rollout yet."
            columns={[
              { key: 'policy', label: 'Policy', sortBy: (canary) => canary.policy, render: (canary) => <Link to={`/policies/${encodeURIComponent(canary.policy)}`}>{canary.policy}</Link> },
              { key: 'state', label: 'State', sortBy: (canary) => canary.state, render: (canary) => canary.state.replace('_', ' ') },
              {
                key: 'share',
                label: 'Share',
                sortBy: (canary) => canary.share ?? 100,
                render: (canary) =>
                  canary.sidecarLabels === null ? percent(canary.share ?? 0) : `sidecars labelled ${Object.entries(canary.sidecarLabels).map(([name, value]) => `${name}=${value}`).join(', ')}`,
              },
              { key: 'canary', label: 'Canary cohort', render: (canary) => cohortText(canary.canary) },
              { key: 'stable', label: 'The rest', render: (canary) => cohortText(canary.stable) },
              { key: 'started', label: 'Started', sortBy: (canary) => canary.startedAt, render: (canary) => <time title={dateTime(canary.startedAt)}>{relative(canary.startedAt)}</time> },
              {
                key: 'outcome',
                label: 'Outcome',
                render: (canary) =>
                  canary.state === 'running' ? (
                    <span className="actions">
                      <button type="button" disabled={busy} onClick={() => step(canary, 'promote')} aria-label={`Promote the canary of ${canary.policy}`}>
                        Promote
                      </button>{' '}
                      <button type="button" disabled={busy} onClick={() => step(canary, 'abort')} aria-label={`Abort the canary of ${canary.policy}`}>
                        Abort
                      </button>
                    </span>
                  ) : (
                    canary.outcome
                  ),
              },
            ]}
          />
        )}
      </LoadedView>
    </section>
  );
}

function cohortText(cohort: CanaryCohort): string {
  return `${count(cohort.decisions)} decisions · ${percent(cohort.denyRate)} denied · ${percent(cohort.approvalRate)} held · ${percent(cohort.errorRate)} errors`;
}

/** Shadow policies (mode: shadow) on live traffic: what they would deny, and whom (GET /admin/analytics/shadow; docs/policies.md "Shadow policies"). */
function ShadowPolicies() {
  const { api, period } = useDashboard();
  const shadow = useLoad((signal) => api.get<{ policies: ShadowPolicyStat[] }>('/admin/analytics/shadow', { period }, signal), [api, period]);
  return (
    <section className="card" aria-labelledby="shadow-title">
      <h2 id="shadow-title">Shadow policies</h2>
      <p className="muted">Evaluated on every decision they apply to and recorded, never enforced; `ags policy promote` puts one in force.</p>
      <LoadedView loaded={shadow} what="the shadow policies' results">
        {(data) => (
          <SortableTable
            caption={`What shadow policies would have done over the last ${period}`}
            testId="shadow-policies"
            rows={data.policies}
            rowKey={(policy) => policy.name}
            initialSort={{ key: 'rate', descending: true }}
            empty="No shadow policy applied to a decision in this period."
            columns={[
              { key: 'name', label: 'Policy', sortBy: (policy) => policy.name, render: (policy) => policy.name },
              { key: 'evaluated', label: 'Evaluated', numeric: true, sortBy: (policy) => policy.evaluated, render: (policy) => count(policy.evaluated) },
              { key: 'rate', label: 'Would deny', numeric: true, sortBy: (policy) => policy.wouldDenyRate, render: (policy) => percent(policy.wouldDenyRate) },
              { key: 'flip', label: 'Allowed now, would deny', numeric: true, sortBy: (policy) => policy.wouldFlip, render: (policy) => count(policy.wouldFlip) },
              { key: 'agents', label: 'Agents it would hit', render: (policy) => policy.topAgents.map((agent) => `${agent.name ?? agent.key} (${count(agent.count)})`).join(', ') || '—' },
              { key: 'actions', label: 'Actions it would hit', render: (policy) => policy.topActions.map((action) => `${action.key} (${count(action.count)})`).join(', ') || '—' },
            ]}
          />
        )}
      </LoadedView>
    </section>
  );
}

/** A draft policy, validated, simulated against one input, or replayed over recorded traffic; nothing is put in force. */
function PolicyLab({ startFrom }: { startFrom: string | null }) {
  const { api } = useDashboard();
  const [draft, setDraft] = useState(DRAFT_EXAMPLE);
  const [loadError, setLoadError] = useState<Error | null>(null);
  useEffect(() => {
    if (startFrom === null) return;
    api.get<PolicyDetail>(`/admin/policies/${encodeURIComponent(startFrom)}`).then(
      (policy) => setDraft(policy.source),
      (failure: Error) => setLoadError(failure),
    );
  }, [api, startFrom]);
  return (
    <section className="card" aria-labelledby="lab-title">
      <h2 id="lab-title">Policy lab</h2>
      <p className="muted">
        Write a draft (YAML or JSON, one policy or a <code>policies:</code> list), check it, try it on one request, or replay recorded traffic through it. Nothing here changes the
        policies in force.
      </p>
      {loadError && <ErrorMessage error={loadError} title={`Could not load ${startFrom}`} />}
      <label htmlFor="draft">Draft</label>
      <textarea id="draft" className="code" rows={12} spellCheck={false} value={draft} onChange={(event) => setDraft(event.target.value)} />
      <Validate draft={draft} />
      <div className="grid-2">
        <Simulate draft={draft} />
        <BacktestDraft draft={draft} />
      </div>
    </section>
  );
}

function Validate({ draft }: { draft: string }) {
  const { api } = useDashboard();
  const [result, setResult] = useState<ValidationResult | null>(null);
  const [error, setError] = useState<Error | null>(null);
  const validate = () => {
    setError(null);
    api.post<ValidationResult>('/admin/policies/validate', { yaml: draft }).then(setResult, (failure: Error) => {
      setResult(null);
      setError(failure);
    });
  };
  return (
    <div className="lab-step">
      <button type="button" onClick={validate}>
        Validate the draft
      </button>
      <div role="status" data-testid="validation-result">
        {result?.valid && <p className="message message-good">Valid: {result.policies.join(', ')}.</p>}
        {result && !result.valid && (
          <div className="message message-error">
            {result.errorCount} error{result.errorCount === 1 ? '' : 's'}:
            <ul className="policy-errors">
              {result.errors.map((item, index) => (
                <li key={index}>
                  line {item.line}, column {item.column}
                  {item.rule ? ` (rule ${item.rule})` : ''}: {item.message}
                </li>
              ))}
            </ul>
          </div>
        )}
      </div>
      {error && <ErrorMessage error={error} />}
    </div>
  );
}

/** A JSON object typed by the admin; an empty box is no object. */
function parseObject(text: string, what: string): Record<string, unknown> | undefined {
  if (text.trim() === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new Error(`${what} is not valid JSON: ${(error as Error).message}`, { cause: error });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error(`${what} must be a JSON object, like {"amount": 250}`);
  return value as Record<string, unknown>;
}

function Simulate({ draft }: { draft: string }) {
  const { api } = useDashboard();
  const agents = useLoad((signal) => api.get<{ agents: Agent[] }>('/admin/agents', undefined, signal), [api]);
  const [agentId, setAgentId] = useState('');
  const [action, setAction] = useState('write:orders');
  const [args, setArgs] = useState('');
  const [context, setContext] = useState('');
  const [against, setAgainst] = useState<'current' | 'draft'>('current');
  const [result, setResult] = useState<Simulation | null>(null);
  const [error, setError] = useState<Error | null>(null);
  const simulate = (event: FormEvent) => {
    event.preventDefault();
    setError(null);
    let input: Record<string, unknown>;
    try {
      input = { action: action.trim(), agentId: agentId || undefined, args: parseObject(args, 'Arguments'), context: parseObject(context, 'Context') };
    } catch (failure) {
      setResult(null);
      return setError(failure as Error);
    }
    api.post<Simulation>('/admin/policies/simulate', { json: { input, policies: against === 'draft' ? draft : undefined } }).then(setResult, (failure: Error) => {
      setResult(null);
      setError(failure);
    });
  };
  return (
    <form className="lab-step" onSubmit={simulate} aria-labelledby="simulate-title">
      <h3 id="simulate-title">Simulate one request</h3>
      <Field label="Agent">
        {(id) => (
          <select id={id} value={agentId} onChange={(event) => setAgentId(event.target.value)}>
            <option value="">none (no agent facts)</option>
            {(agents.data?.agents ?? []).map((agent) => (
              <option key={agent.id} value={agent.id}>
                {agent.name} ({agent.trustTier})
              </option>
            ))}
          </select>
        )}
      </Field>
      <Field label="Action">{(id) => <input id={id} required value={action} onChange={(event) => setAction(event.target.value)} placeholder="read:orders/42" />}</Field>
      <Field label="Arguments (JSON)">
        {(id) => <textarea id={id} className="code" rows={2} value={args} onChange={(event) => setArgs(event.target.value)} placeholder='{"amount": 250}' />}
      </Field>
      <Field label="Context (JSON)">
        {(id) => <textarea id={id} className="code" rows={2} value={context} onChange={(event) => setContext(event.target.value)} placeholder='{"ticket": "T-1"}' />}
      </Field>
      <fieldset className="inline-choices">
        <legend>Policies</legend>
        <label>
          <input type="radio" name="against" checked={against === 'current'} onChange={() => setAgainst('current')} /> in force
        </label>
        <label>
          <input type="radio" name="against" checked={against === 'draft'} onChange={() => setAgainst('draft')} /> in force, with the draft
        </label>
      </fieldset>
      <button type="submit" className="primary">
        Simulate
      </button>
      {error && <ErrorMessage error={error} />}
      {result && <SimulationResult result={result} />}
    </form>
  );
}

function DecisionLine({ decision }: { decision: Decision }) {
  return (
    <>
      <span className={`badge badge-${decision.decision}`}>{decision.decision}</span> {decision.policy && <strong>{decision.policy}</strong>}
      {decision.rule && <> · {decision.rule}</>}
      {decision.reason && <>: {decision.reason}</>}
    </>
  );
}

function SimulationResult({ result }: { result: Simulation }) {
  return (
    <div className="simulation" data-testid="simulation-result" role="status">
      <p>
        <DecisionLine decision={result} />
      </p>
      <p className="muted small">
        {result.policyVersion === null ? 'Proposed policies' : `Policy version ${result.policyVersion}`}
        {result.rateLimit && ` · rate limit ${result.rateLimit.limit}, retry after ${result.rateLimit.retryAfterSeconds} s`}
        {!result.enforced && ' · not enforced (audit mode)'}
      </p>
      {(result.alerts ?? []).length > 0 && <p>Alerts: {(result.alerts ?? []).map((alert) => `${alert.policy} · ${alert.rule}: ${alert.reason}`).join('; ')}</p>}
      <div className="table-scroll">
        <table data-testid="simulation-trace">
          <caption>Trace: every rule tried, in order</caption>
          <thead>
            <tr>
              <th scope="col">Policy</th>
              <th scope="col">Rule</th>
              <th scope="col">Action</th>
              <th scope="col">Condition</th>
            </tr>
          </thead>
          <tbody>
            {result.trace
              .filter((policy) => policy.applicable)
              .flatMap((policy) =>
                (policy.rules.length > 0 ? policy.rules : [null]).map((rule, index) => (
                  <tr key={`${policy.policy}-${index}`} className={rule?.result === true ? 'fired' : undefined}>
                    <td>{policy.policy}</td>
                    <td>{rule?.rule ?? '—'}</td>
                    <td>{rule?.action ?? '—'}</td>
                    <td>{rule === null ? 'no rules' : rule.result === 'not-reached' ? 'not reached' : rule.result ? 'true: fired' : 'false'}</td>
                  </tr>
                )),
              )}
          </tbody>
        </table>
      </div>
      <p className="muted small">
        Not applicable (their match left this request out):{' '}
        {result.trace
          .filter((policy) => !policy.applicable)
          .map((policy) => policy.policy)
          .join(', ') || 'none'}
      </p>
    </div>
  );
}

function BacktestDraft({ draft }: { draft: string }) {
  const { api, period } = useDashboard();
  const [result, setResult] = useState<Backtest | null>(null);
  const [error, setError] = useState<Error | null>(null);
  const [busy, setBusy] = useState(false);
  const run = () => {
    setBusy(true);
    setError(null);
    const from = new Date(Date.now() - PERIOD_MS[period]).toISOString();
    api.post<Backtest>('/admin/policies/backtest', { json: { policies: draft, from } }).then(
      (report) => {
        setBusy(false);
        setResult(report);
      },
      (failure: Error) => {
        setBusy(false);
        setResult(null);
        setError(failure);
      },
    );
  };
  return (
    <div className="lab-step">
      <h3>Backtest the draft</h3>
      <p className="muted small">Replays the decisions recorded over the last {period} (the period in the header) through the policies in force with the draft, and lists every decision that would flip.</p>
      <button type="button" onClick={run} disabled={busy}>
        {busy ? 'Replaying…' : `Backtest over the last ${period}`}
      </button>
      {error && <ErrorMessage error={error} />}
      {result && (
        <div data-testid="backtest-result" role="status">
          <dl className="facts">
            <div>
              <dt>Replayed</dt>
              <dd>{count(result.examined - result.skipped)}</dd>
            </div>
            <div>
              <dt>Unchanged</dt>
              <dd>{count(result.unchanged)}</dd>
            </div>
            <div>
              <dt>Allow → deny</dt>
              <dd>{count(result.allowToDeny)}</dd>
            </div>
            <div>
              <dt>Deny → allow</dt>
              <dd>{count(result.denyToAllow)}</dd>
            </div>
          </dl>
          {result.skipped > 0 && <p className="muted small">{result.skipped} decisions had no recorded input and were not replayed.</p>}
          {result.truncated && <p className="muted small">The replay stopped at its limit before the end of the period.</p>}
          {result.flips.length > 0 && (
            <div className="table-scroll">
              <table>
                <caption>Decisions that would flip</caption>
                <thead>
                  <tr>
                    <th scope="col">Time</th>
                    <th scope="col">Action</th>
                    <th scope="col">Before</th>
                    <th scope="col">After</th>
                  </tr>
                </thead>
                <tbody>
                  {result.flips.map((flip) => (
                    <tr key={flip.id}>
                      <td>{dateTime(flip.timestamp)}</td>
                      <td>
                        <code>{flip.action}</code>
                      </td>
                      <td>
                        <DecisionLine decision={flip.before} />
                      </td>
                      <td>
                        <DecisionLine decision={flip.after} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </div>
      )}
    </div>
  );
}

import { useState, type FormEvent } from 'react';
import { CopyButton } from '../components/copy-button';
import { ErrorMessage } from '../components/error-message';
import { Field } from '../components/field';
import { LoadedView } from '../components/loaded-view';
import { SortableTable } from '../components/sortable-table';
import { useDashboard } from '../context';
import { count, dateTime, relative } from '../format';
import { useLoad } from '../load';
import { Link } from '../router';
import { TIERS, type Agent, type AgentStat, type CreatedAgent, type Tier } from '../types';
import { RevokeAgent, TierChanger } from './agent-actions';

/** The organization's agents (GET /admin/agents) with their traffic of the period (GET /admin/analytics/agents). */
export function AgentsPage() {
  const { api, period } = useDashboard();
  const [includeRevoked, setIncludeRevoked] = useState(false);
  const [created, setCreated] = useState<CreatedAgent | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const agents = useLoad((signal) => api.get<{ agents: Agent[] }>('/admin/agents', { includeRevoked }, signal), [api, includeRevoked]);
  const stats = useLoad((signal) => api.get<{ agents: AgentStat[] }>('/admin/analytics/agents', { period, limit: 100 }, signal), [api, period]);
  const traffic = new Map((stats.data?.agents ?? []).map((stat) => [stat.id, stat]));

  const changed = (message: string) => {
    setNotice(message);
    agents.reload();
  };

  return (
    <>
      <h1>Agents</h1>
      <CreateAgent
        onCreated={(agent) => {
          setCreated(agent);
          changed(`Agent ${agent.name} created.`);
        }}
      />
      {created && <TokenOnce agent={created} onDone={() => setCreated(null)} />}
      {notice && (
        <p className="message message-info" role="status">
          {notice}
        </p>
      )}
      <section className="card" aria-labelledby="agents-title">
        <div className="section-head">
          <h2 id="agents-title">All agents</h2>
          <label className="inline">
            <input type="checkbox" checked={includeRevoked} onChange={(event) => setIncludeRevoked(event.target.checked)} /> Show revoked agents
          </label>
        </div>
        {stats.error && <ErrorMessage error={stats.error} title={`Could not load the agents' traffic of the last ${period}`} />}
        <LoadedView loaded={agents} what="the agents">
          {(data) => (
            <SortableTable
              caption="Agents of the organization"
              testId="agents"
              rows={data.agents}
              rowKey={(agent) => agent.id}
              initialSort={{ key: 'created', descending: true }}
              empty="No agents yet: create the first one above."
              columns={[
                {
                  key: 'name',
                  label: 'Agent',
                  sortBy: (agent) => agent.name,
                  render: (agent) => (
                    <>
                      <Link to={`/agents/${encodeURIComponent(agent.id)}`}>{agent.name}</Link>
                      <div className="muted small">
                        <code>{agent.id}</code>
                      </div>
                    </>
                  ),
                },
                { key: 'status', label: 'Status', sortBy: (agent) => agent.status, render: (agent) => <span className={`badge badge-${agent.status}`}>{agent.status}</span> },
                { key: 'tags', label: 'Tags', render: (agent) => agent.tags.join(', ') || '—' },
                { key: 'requests', label: `Requests (${period})`, numeric: true, sortBy: (agent) => traffic.get(agent.id)?.requests ?? 0, render: (agent) => count(traffic.get(agent.id)?.requests ?? 0) },
                { key: 'denied', label: 'Denied', numeric: true, sortBy: (agent) => traffic.get(agent.id)?.denied ?? 0, render: (agent) => count(traffic.get(agent.id)?.denied ?? 0) },
                { key: 'created', label: 'Created', sortBy: (agent) => agent.createdAt, render: (agent) => <time title={dateTime(agent.createdAt)}>{relative(agent.createdAt)}</time> },
                {
                  key: 'tier',
                  label: 'Trust tier',
                  sortBy: (agent) => TIERS.indexOf(agent.trustTier),
                  render: (agent) => (agent.status === 'revoked' ? agent.trustTier : <TierChanger agent={agent} onChanged={changed} />),
                },
                { key: 'actions', label: 'Revoke', render: (agent) => (agent.status === 'revoked' ? <span className="muted">revoked {relative(agent.revokedAt)}</span> : <RevokeAgent agent={agent} onRevoked={changed} />) },
              ]}
            />
          )}
        </LoadedView>
      </section>
    </>
  );
}

function CreateAgent({ onCreated }: { onCreated: (agent: CreatedAgent) => void }) {
  const { api } = useDashboard();
  const [name, setName] = useState('');
  const [tier, setTier] = useState<Tier>('verified');
  const [tags, setTags] = useState('');
  const [error, setError] = useState<Error | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    const tagList = tags
      .split(',')
      .map((tag) => tag.trim())
      .filter((tag) => tag !== '');
    api.post<CreatedAgent>('/admin/agents', { json: { name: name.trim(), trustTier: tier, tags: tagList } }).then(
      (agent) => {
        setBusy(false);
        setName('');
        setTags('');
        onCreated(agent);
      },
      (failure: Error) => {
        setBusy(false);
        setError(failure);
      },
    );
  };
  return (
    <section className="card" aria-labelledby="create-agent-title">
      <h2 id="create-agent-title">Create an agent</h2>
      <form className="form-row" onSubmit={submit}>
        <Field label="Name">{(id) => <input id={id} required value={name} onChange={(event) => setName(event.target.value)} placeholder="invoice-bot" />}</Field>
        <Field label="Trust tier">
          {(id) => (
            <select id={id} value={tier} onChange={(event) => setTier(event.target.value as Tier)}>
              {TIERS.map((candidate) => (
                <option key={candidate}>{candidate}</option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Tags (comma-separated)">{(id) => <input id={id} value={tags} onChange={(event) => setTags(event.target.value)} placeholder="finance, eu" />}</Field>
        <button type="submit" className="primary" disabled={busy}>
          {busy ? 'Creating…' : 'Create agent'}
        </button>
      </form>
      {error && <ErrorMessage error={error} />}
    </section>
  );
}

/** The agent token, which the gateway shows only in the creation answer. */
function TokenOnce({ agent, onDone }: { agent: CreatedAgent; onDone: () => void }) {
  return (
    <section className="card token-once" aria-labelledby="token-title" data-testid="token-once">
      <h2 id="token-title">Token of {agent.name}: shown once</h2>
      <p>Store it now: the gateway keeps only its signature, and this page forgets it when you close this box. It expires {dateTime(agent.tokenExpiresAt)}.</p>
      <label htmlFor="agent-token">Agent token</label>
      <textarea id="agent-token" readOnly rows={3} value={agent.token} onFocus={(event) => event.target.select()} />
      <div className="actions">
        <CopyButton text={agent.token} label="Copy token" />
        <button type="button" onClick={onDone}>
          I have stored it
        </button>
      </div>
    </section>
  );
}

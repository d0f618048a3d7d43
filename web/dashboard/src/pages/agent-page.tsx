import { useState } from 'react';
import { LoadedView } from '../components/loaded-view';
import { useDashboard } from '../context';
import { count, dateTime, relative } from '../format';
import { useLoad } from '../load';
import { Link, withQuery } from '../router';
import type { Agent, Trust } from '../types';
import { RevokeAgent, TierChanger } from './agent-actions';
import { SessionTimelineCard } from './session-timeline';

/** One agent: its record (GET /admin/agents/:id) and its trust score with the factors that made it (GET /api/v1/trust/:id, docs/trust.md). */
export function AgentPage({ agentId }: { agentId: string }) {
  const { api } = useDashboard();
  const [notice, setNotice] = useState<string | null>(null);
  const agent = useLoad((signal) => api.get<Agent>(`/admin/agents/${encodeURIComponent(agentId)}`, undefined, signal), [api, agentId]);
  const trust = useLoad((signal) => api.get<Trust>(`/api/v1/trust/${encodeURIComponent(agentId)}`, undefined, signal), [api, agentId]);
  const changed = (message: string) => {
    setNotice(message);
    agent.reload();
    trust.reload();
  };
  return (
    <>
      <p>
        <Link to="/agents">← All agents</Link>
      </p>
      <LoadedView loaded={agent} what="the agent">
        {(data) => (
          <>
            <h1>{data.name}</h1>
            {notice && (
              <p className="message message-info" role="status">
                {notice}
              </p>
            )}
            <div className="grid-2">
              <section className="card" aria-labelledby="identity-title">
                <h2 id="identity-title">Identity</h2>
                <dl className="fields">
                  <dt>Id</dt>
                  <dd>
                    <code>{data.id}</code>
                  </dd>
                  <dt>Status</dt>
                  <dd>
                    <span className={`badge badge-${data.status}`}>{data.status}</span>
                    {data.revokedAt && ` since ${dateTime(data.revokedAt)}`}
                  </dd>
                  <dt>Tags</dt>
                  <dd>{data.tags.join(', ') || '—'}</dd>
                  <dt>Created</dt>
                  <dd>{dateTime(data.createdAt)}</dd>
                  <dt>Trust tier</dt>
                  <dd>{data.status === 'revoked' ? data.trustTier : <TierChanger key={data.trustTier} agent={data} onChanged={changed} />}</dd>
                </dl>
                <div className="actions">
                  <Link to={withQuery('/audit', { agentId: data.id })}>Its audit trail</Link>
                  {data.status === 'active' && <RevokeAgent agent={data} onRevoked={changed} />}
                </div>
              </section>
              <section className="card" aria-labelledby="trust-title">
                <h2 id="trust-title">Trust score</h2>
                <LoadedView loaded={trust} what="the trust score">
                  {(score) => <TrustScore trust={score} />}
                </LoadedView>
              </section>
            </div>
            <SessionTimelineCard agent={data} />
          </>
        )}
      </LoadedView>
    </>
  );
}

function TrustScore({ trust }: { trust: Trust }) {
  const { factors } = trust;
  return (
    <>
      <div className="score" data-testid="trust-score">
        <meter min={0} max={1000} low={400} high={700} optimum={1000} value={trust.score} aria-label="Trust score out of 1000" />
        <span className="score-value">{trust.score}</span>
        <span className="muted"> / 1000</span>
      </div>
      <table className="factors">
        <caption className="visually-hidden">Factors of the trust score, over the last {trust.window}</caption>
        <thead>
          <tr>
            <th scope="col">Factor</th>
            <th scope="col">Measure</th>
            <th scope="col" className="numeric">
              Points
            </th>
          </tr>
        </thead>
        <tbody>
          <tr>
            <td>Tier</td>
            <td>{factors.tier.value}</td>
            <td className="numeric">+{factors.tier.points}</td>
          </tr>
          <tr>
            <td>Age</td>
            <td>{factors.age.days} days</td>
            <td className="numeric">+{factors.age.points}</td>
          </tr>
          <tr>
            <td>Denials</td>
            <td>
              {count(factors.denyRatio.denied)} of {count(factors.denyRatio.decisions)} decisions ({factors.denyRatio.ratio})
            </td>
            <td className="numeric">{factors.denyRatio.points}</td>
          </tr>
          <tr>
            <td>Rate-limit hits</td>
            <td>{count(factors.rateLimitHits.count)}</td>
            <td className="numeric">{factors.rateLimitHits.points}</td>
          </tr>
          <tr>
            <td>Revoked</td>
            <td colSpan={2}>{factors.revoked.value ? 'yes: the score is 0' : 'no'}</td>
          </tr>
        </tbody>
      </table>
      <p className="muted small">
        Denials and rate-limit hits over the last {trust.window}; computed {relative(trust.computedAt)}.
      </p>
    </>
  );
}

import { useState } from 'react';
import { ErrorMessage } from '../components/error-message';
import { useDashboard } from '../context';
import { dateTime } from '../format';
import type { Agent, SessionTimeline } from '../types';

/**
 * One session of the agent as a timeline (GET /admin/sessions/timeline) and the controls that
 * end labels (POST /admin/sessions/clear-labels): of the session shown, or on the agent itself.
 * An empty session id is the agent's own scope (its calls that name no session).
 */
export function SessionTimelineCard({ agent }: { agent: Agent }) {
  const { api } = useDashboard();
  const [sessionId, setSessionId] = useState('');
  const [timeline, setTimeline] = useState<SessionTimeline | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [error, setError] = useState<Error | null>(null);
  const show = (id: string) => {
    setError(null);
    api.get<SessionTimeline>('/admin/sessions/timeline', { agentId: agent.id, sessionId: id }).then(setTimeline, (failure: Error) => setError(failure));
  };
  const clear = (scope: 'session' | 'agent') => {
    setError(null);
    const shown = timeline?.sessionId ?? sessionId;
    api.post<{ cleared: boolean }>('/admin/sessions/clear-labels', { json: { agentId: agent.id, scope, ...(scope === 'session' ? { sessionId: shown } : {}) } }).then(
      () => {
        setNotice(scope === 'agent' ? `The labels on ${agent.name} are ended.` : `The labels of session “${shown || 'own scope'}” are ended.`);
        show(shown);
      },
      (failure: Error) => setError(failure),
    );
  };
  return (
    <section className="card" aria-labelledby="session-title">
      <h2 id="session-title">Session timeline</h2>
      <form
        className="inline-form"
        onSubmit={(event) => {
          event.preventDefault();
          setNotice(null);
          show(sessionId.trim());
        }}
      >
        <label>
          Session id <span className="muted small">(empty: the agent’s own scope)</span>
          <input value={sessionId} onChange={(event) => setSessionId(event.target.value)} maxLength={128} aria-label="Session id" />
        </label>
        <button type="submit">Show timeline</button>
      </form>
      {notice && (
        <p className="message message-info" role="status">
          {notice}
        </p>
      )}
      {error && <ErrorMessage error={error} />}
      {timeline && <Timeline timeline={timeline} onClear={clear} />}
    </section>
  );
}

function Timeline({ timeline, onClear }: { timeline: SessionTimeline; onClear: (scope: 'session' | 'agent') => void }) {
  return (
    <>
      <dl className="fields">
        <dt>Session labels now</dt>
        <dd data-testid="session-labels">{timeline.labels.join(', ') || '—'}</dd>
        <dt>Agent labels now</dt>
        <dd data-testid="agent-labels">{timeline.agentLabels.join(', ') || '—'}</dd>
      </dl>
      <div className="actions">
        <button type="button" className="danger" onClick={() => onClear('session')} disabled={timeline.labels.length === 0}>
          Clear session labels
        </button>
        <button type="button" className="danger" onClick={() => onClear('agent')} disabled={timeline.agentLabels.length === 0}>
          Clear agent labels
        </button>
      </div>
      {timeline.calls.length === 0 ? (
        <p className="muted">No calls of this session in the last 24 hours.</p>
      ) : (
        <table data-testid="session-timeline">
          <caption className="visually-hidden">Calls of session {timeline.sessionId || '(own scope)'}, oldest first</caption>
          <thead>
            <tr>
              <th scope="col">Time</th>
              <th scope="col">Action</th>
              <th scope="col">Decision</th>
              <th scope="col">Policy</th>
              <th scope="col">Labels read</th>
              <th scope="col">Labels added</th>
              <th scope="col">Budget</th>
            </tr>
          </thead>
          <tbody>
            {timeline.calls.map((call) => (
              <tr key={call.id}>
                <td>{dateTime(call.timestamp)}</td>
                <td data-column="action">
                  <code>{call.action}</code> <span className="muted small">{call.source}</span>
                </td>
                <td data-column="decision">
                  <span className={`badge badge-${call.decision}`}>{call.decision}</span>
                </td>
                <td title={call.reason ?? undefined}>{call.rule ?? call.policy ?? '—'}</td>
                <td data-column="labels">{[...call.labels, ...call.agentLabels.map((label) => `${label} (agent)`)].join(', ') || '—'}</td>
                <td data-column="labels-added">{call.labelsAdded.join(', ') || '—'}</td>
                <td>{call.budget ?? (call.reserved === null ? '—' : `reserved ${call.reserved}`)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {timeline.truncated && <p className="muted small">More calls follow; the first 200 are shown.</p>}
    </>
  );
}

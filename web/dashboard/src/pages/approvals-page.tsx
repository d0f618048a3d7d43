import { useState } from 'react';
import type { Api } from '../api';
import { ErrorMessage } from '../components/error-message';
import { Field } from '../components/field';
import { LoadedView } from '../components/loaded-view';
import { useDashboard } from '../context';
import { dateTime, json, relative } from '../format';
import { useLoad } from '../load';
import { type Agent, APPROVAL_STATUSES, type Approval, type ApprovalPage, type ApprovalStatus, type AuditEntry, type AuditPage, type ToolPin } from '../types';

/**
 * What waits for a person: requests held by a `require_approval` rule (GET /admin/approvals,
 * approve or reject) and MCP tools held by their pin because their definition changed
 * (GET /admin/mcp/tools?held=true, accept; docs/mcp.md "Tool pinning").
 */
export function ApprovalsPage() {
  return (
    <>
      <h1>Approvals</h1>
      <PendingRequests />
      <HeldTools />
    </>
  );
}

/** Approvals a page shows: a flood of them pages, it never hides one (docs/approvals.md "Listing and limits"). */
const APPROVALS_PAGE = 20;

function PendingRequests() {
  const { api } = useDashboard();
  const [status, setStatus] = useState<ApprovalStatus>('pending');
  const [agentId, setAgentId] = useState('');
  const [notice, setNotice] = useState<string | null>(null);
  const filterKey = `${status}|${agentId}`;
  // The cursor of each page seen so far under these filters: "Newer" walks back through them.
  const [paging, setPaging] = useState<{ filterKey: string; cursors: Array<string | undefined> }>({ filterKey, cursors: [undefined] });
  const cursors = paging.filterKey === filterKey ? paging.cursors : [undefined];
  const setCursors = (next: (current: Array<string | undefined>) => Array<string | undefined>) => setPaging({ filterKey, cursors: next(cursors) });
  const cursor = cursors[cursors.length - 1];
  const query = { status, limit: APPROVALS_PAGE, cursor, agentId: agentId === '' ? undefined : agentId };
  const approvals = useLoad((signal) => api.get<ApprovalPage>('/admin/approvals', query, signal), [api, filterKey, cursor]);
  const agents = useLoad((signal) => api.get<{ agents: Agent[] }>('/admin/agents', { includeRevoked: true }, signal), [api]);
  return (
    <section className="card" aria-labelledby="requests-title">
      <div className="section-head">
        <h2 id="requests-title">Requests</h2>
        <fieldset className="inline-choices">
          <legend className="visually-hidden">Status</legend>
          {APPROVAL_STATUSES.map((candidate) => (
            <label key={candidate} className={candidate === status ? 'chosen' : undefined}>
              <input type="radio" name="approval-status" checked={candidate === status} onChange={() => setStatus(candidate)} /> {candidate}
            </label>
          ))}
        </fieldset>
        <Field label="Agent">
          {(id) => (
            <select id={id} value={agentId} onChange={(event) => setAgentId(event.target.value)}>
              <option value="">all agents</option>
              {(agents.data?.agents ?? []).map((agent) => (
                <option key={agent.id} value={agent.id}>
                  {agent.name} ({agent.id})
                </option>
              ))}
            </select>
          )}
        </Field>
        <span className="muted" role="status" data-testid="approvals-page">
          Page {cursors.length}
          {approvals.loading && ' · loading…'}
        </span>
      </div>
      {notice && (
        <p className="message message-info" role="status">
          {notice}
        </p>
      )}
      <LoadedView loaded={approvals} what="the approvals">
        {(data) => (
          <>
            {data.approvals.length === 0 ? (
              <p className="muted">No {status} requests.</p>
            ) : (
              <ul className="approval-list" data-testid="approvals">
                {data.approvals.map((approval) => (
                  <ApprovalItem
                    key={approval.id}
                    approval={approval}
                    onDecided={(message) => {
                      setNotice(message);
                      approvals.reload();
                    }}
                  />
                ))}
              </ul>
            )}
            <div className="pager">
              <button type="button" disabled={cursors.length === 1} onClick={() => setCursors((stack) => stack.slice(0, -1))}>
                ← Newer
              </button>
              <button type="button" disabled={data.nextCursor === null} onClick={() => data.nextCursor && setCursors((stack) => [...stack, data.nextCursor!])}>
                Older →
              </button>
            </div>
          </>
        )}
      </LoadedView>
    </section>
  );
}

function ApprovalItem({ approval, onDecided }: { approval: Approval; onDecided: (message: string) => void }) {
  const { api } = useDashboard();
  const [comment, setComment] = useState('');
  const [error, setError] = useState<Error | null>(null);
  const [busy, setBusy] = useState(false);
  const decide = (verdict: 'approve' | 'reject') => {
    setBusy(true);
    setError(null);
    const body = comment.trim() === '' ? {} : { comment: comment.trim() };
    api.post<Approval>(`/admin/approvals/${encodeURIComponent(approval.id)}/${verdict}`, { json: body }).then(
      (decided) => {
        setBusy(false);
        onDecided(`Request ${decided.id} of ${decided.agentName ?? decided.agentId} ${decided.status}.`);
      },
      (failure: Error) => {
        setBusy(false);
        setError(failure);
      },
    );
  };
  const who = approval.agentName ?? approval.agentId;
  return (
    <li className="approval" data-approval-id={approval.id}>
      <div className="approval-head">
        <strong>{who}</strong> wants <code>{approval.action}</code>
        {approval.method && (
          <span className="muted">
            {' '}
            ({approval.method} {approval.path})
          </span>
        )}
      </div>
      <dl className="fields">
        <dt>Why held</dt>
        <dd>
          {approval.policy}
          {approval.rule && ` · ${approval.rule}`}
          {approval.reason && `: ${approval.reason}`}
        </dd>
        <dt>Asked</dt>
        <dd>
          {dateTime(approval.createdAt)} via {approval.source}
        </dd>
        {approval.status === 'pending' && <HeldRequestArguments approval={approval} />}
        <dt>{approval.status === 'pending' ? 'Expires' : 'Expired or expires'}</dt>
        <dd>{relative(approval.expiresAt)}</dd>
        {approval.approvers.length > 0 && (
          <>
            <dt>Approvers</dt>
            <dd>{approval.approvers.join(', ')}</dd>
          </>
        )}
        {approval.decidedAt && (
          <>
            <dt>Decided</dt>
            <dd>
              {dateTime(approval.decidedAt)} by <code>{approval.decidedBy}</code>
              {approval.comment && `: “${approval.comment}”`}
            </dd>
          </>
        )}
      </dl>
      {approval.status === 'pending' && (
        <div className="actions">
          <Field label="Comment (optional)" className="grow">
            {(id) => <input id={id} value={comment} onChange={(event) => setComment(event.target.value)} />}
          </Field>
          <button type="button" className="primary" disabled={busy} onClick={() => decide('approve')} aria-label={`Approve ${approval.action} for ${who}`}>
            Approve
          </button>
          <button type="button" className="danger" disabled={busy} onClick={() => decide('reject')} aria-label={`Reject ${approval.action} for ${who}`}>
            Reject
          </button>
        </div>
      )}
      {error && <ErrorMessage error={error} />}
    </li>
  );
}

/** The audit entries around an approval's creation that may be the request it holds. */
const HELD_ENTRY_WINDOW_MS = 60_000;

/**
 * What the admin is asked to approve: the arguments of the held request (a refund's amount),
 * read from the audit entry of its decision, which names the approval (`details.approvalId`).
 */
function HeldRequestArguments({ approval }: { approval: Approval }) {
  const { api } = useDashboard();
  const entry = useLoad((signal) => heldEntryOf(api, approval, signal), [api, approval.id]);
  return (
    <>
      <dt>Arguments</dt>
      <dd data-testid="approval-arguments">
        <LoadedView loaded={entry} what="the request">
          {(found) =>
            found === null ? (
              <span className="muted">Not in the audit trail yet (it is written within seconds of the request).</span>
            ) : (
              <pre>{json(argumentsOf(found))}</pre>
            )
          }
        </LoadedView>
      </dd>
    </>
  );
}

async function heldEntryOf(api: Api, approval: Approval, signal: AbortSignal): Promise<AuditEntry | null> {
  const created = Date.parse(approval.createdAt);
  const query = {
    agentId: approval.agentId,
    action: approval.action,
    from: new Date(created - HELD_ENTRY_WINDOW_MS).toISOString(),
    to: new Date(created + HELD_ENTRY_WINDOW_MS).toISOString(),
    limit: 100,
  };
  const page = await api.get<AuditPage>('/admin/audit', query, signal);
  return page.entries.find((entry) => entry.details?.approvalId === approval.id) ?? null;
}

/** The request's arguments as its decision saw them (secret-named ones redacted by the gateway). */
function argumentsOf(entry: AuditEntry): unknown {
  const args = entry.input?.args;
  return args === undefined ? entry.input : args;
}

function HeldTools() {
  const { api } = useDashboard();
  const [notice, setNotice] = useState<string | null>(null);
  const tools = useLoad((signal) => api.get<{ tools: ToolPin[] }>('/admin/mcp/tools', { held: 'true' }, signal), [api]);
  return (
    <section className="card" aria-labelledby="tools-title">
      <h2 id="tools-title">MCP tools held by their pin</h2>
      {notice && (
        <p className="message message-info" role="status">
          {notice}
        </p>
      )}
      <LoadedView loaded={tools} what="the held MCP tools">
        {(data) =>
          data.tools.length === 0 ? (
            <p className="muted">No tool is held: every MCP tool offers the definition that was pinned.</p>
          ) : (
            <ul className="approval-list" data-testid="held-tools">
              {data.tools.map((tool) => (
                <HeldTool
                  key={`${tool.server}/${tool.tool}`}
                  tool={tool}
                  onAccepted={(message) => {
                    setNotice(message);
                    tools.reload();
                  }}
                />
              ))}
            </ul>
          )
        }
      </LoadedView>
    </section>
  );
}

function shown(value: unknown): string {
  return typeof value === 'string' ? value : json(value);
}

function HeldTool({ tool, onAccepted }: { tool: ToolPin; onAccepted: (message: string) => void }) {
  const { api } = useDashboard();
  const [error, setError] = useState<Error | null>(null);
  const accept = () => {
    setError(null);
    api.post<ToolPin>(`/admin/mcp/tools/${encodeURIComponent(tool.server)}/${encodeURIComponent(tool.tool)}/accept`).then(
      () => onAccepted(`${tool.server}/${tool.tool}: the new definition is pinned and the tool may be called again.`),
      (failure: Error) => setError(failure),
    );
  };
  return (
    <li className="approval" data-tool={`${tool.server}/${tool.tool}`}>
      <div className="approval-head">
        <strong>
          {tool.server}/{tool.tool}
        </strong>{' '}
        changed its {tool.changes.join(' and ')} <span className="muted">(held {relative(tool.heldSince)})</span>
      </div>
      <div className="table-scroll">
        <table className="diff">
          <caption className="visually-hidden">What changed in {tool.tool}</caption>
          <thead>
            <tr>
              <th scope="col">Field</th>
              <th scope="col">Pinned</th>
              <th scope="col">Offered now</th>
            </tr>
          </thead>
          <tbody>
            {Object.entries(tool.diff).map(([field, change]) => (
              <tr key={field}>
                <th scope="row">{field}</th>
                <td>
                  <pre className="removed">{shown(change.pinned)}</pre>
                </td>
                <td>
                  <pre className="added">{shown(change.current)}</pre>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <div className="actions">
        <button type="button" className="primary" onClick={accept} aria-label={`Accept the new definition of ${tool.server}/${tool.tool}`}>
          Accept the new definition
        </button>
      </div>
      {error && <ErrorMessage error={error} />}
    </li>
  );
}

import { useEffect, useRef, useState, type FormEvent } from 'react';
import { ErrorMessage } from '../components/error-message';
import { Field } from '../components/field';
import { LoadedView } from '../components/loaded-view';
import { useDashboard } from '../context';
import { dateTime, json, milliseconds } from '../format';
import { useLoad } from '../load';
import { Link, navigate, useRoute, withQuery } from '../router';
import { AUDIT_SOURCES, type Agent, type AuditEntry, type AuditPage as Page, type AuditVerification } from '../types';

const FILTERS = ['decision', 'source', 'agentId', 'action', 'from', 'to', 'limit'] as const;
type Filters = Partial<Record<(typeof FILTERS)[number], string>>;
const PAGE_SIZES = ['10', '25', '50', '100', '200'];

/**
 * The audit trail, newest first: the filters of GET /admin/audit (kept in the address, so a
 * filtered view can be bookmarked), paging with its cursor, one entry's detail, and the hash
 * chain's verification (GET /admin/audit/verify).
 */
export function AuditPage() {
  const { api } = useDashboard();
  const route = useRoute();
  const filters: Filters = Object.fromEntries(FILTERS.map((name) => [name, route.query.get(name) ?? undefined]));
  const filterKey = JSON.stringify(filters);
  // The cursor of each page seen so far under these filters: "Newer" walks back through them.
  const [paging, setPaging] = useState<{ filterKey: string; cursors: Array<string | undefined> }>({ filterKey, cursors: [undefined] });
  const cursors = paging.filterKey === filterKey ? paging.cursors : [undefined];
  const setCursors = (next: (current: Array<string | undefined>) => Array<string | undefined>) => setPaging({ filterKey, cursors: next(cursors) });
  const cursor = cursors[cursors.length - 1];
  const page = useLoad((signal) => api.get<Page>('/admin/audit', { ...filters, limit: filters.limit ?? '50', cursor }, signal), [api, filterKey, cursor]);
  const agents = useLoad((signal) => api.get<{ agents: Agent[] }>('/admin/agents', { includeRevoked: true }, signal), [api]);
  const [selected, setSelected] = useState<AuditEntry | null>(null);

  return (
    <>
      <h1>Audit trail</h1>
      <FilterForm key={filterKey} filters={filters} agents={agents.data?.agents ?? []} />
      <ChainVerification />
      <section className="card" aria-labelledby="entries-title">
        <div className="section-head">
          <h2 id="entries-title">Entries</h2>
          <span className="muted" role="status">
            Page {cursors.length}
            {page.loading && ' · loading…'}
          </span>
        </div>
        <LoadedView loaded={page} what="the audit entries">
          {(data) => (
            <>
              <EntryTable entries={data.entries} onOpen={setSelected} />
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
      {selected && <EntryDetail entry={selected} onClose={() => setSelected(null)} />}
    </>
  );
}

/** A datetime-local value (the admin's local time) from an ISO timestamp, and back. */
function toLocalInput(iso: string | undefined): string {
  if (!iso) return '';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return '';
  const local = new Date(date.getTime() - date.getTimezoneOffset() * 60_000);
  return local.toISOString().slice(0, 16);
}

function fromLocalInput(value: string): string | undefined {
  if (value === '') return undefined;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? value : date.toISOString();
}

function FilterForm({ filters, agents }: { filters: Filters; agents: Agent[] }) {
  const [draft, setDraft] = useState({ ...filters, from: toLocalInput(filters.from), to: toLocalInput(filters.to) });
  const set = (name: keyof Filters) => (event: { target: { value: string } }) => setDraft((current) => ({ ...current, [name]: event.target.value }));
  const apply = (event: FormEvent) => {
    event.preventDefault();
    navigate(withQuery('/audit', { ...draft, from: fromLocalInput(draft.from ?? ''), to: fromLocalInput(draft.to ?? '') }));
  };
  return (
    <form className="card filters" onSubmit={apply} aria-label="Audit filters">
      <Field label="Decision">
        {(id) => (
          <select id={id} value={draft.decision ?? ''} onChange={set('decision')}>
            <option value="">any</option>
            <option value="allow">allow</option>
            <option value="deny">deny</option>
          </select>
        )}
      </Field>
      <Field label="Source">
        {(id) => (
          <select id={id} value={draft.source ?? ''} onChange={set('source')}>
            <option value="">any</option>
            {AUDIT_SOURCES.map((source) => (
              <option key={source}>{source}</option>
            ))}
          </select>
        )}
      </Field>
      <Field label="Agent">
        {(id) => (
          <select id={id} value={draft.agentId ?? ''} onChange={set('agentId')}>
            <option value="">any</option>
            {draft.agentId && !agents.some((agent) => agent.id === draft.agentId) && <option value={draft.agentId}>{draft.agentId}</option>}
            {agents.map((agent) => (
              <option key={agent.id} value={agent.id}>
                {agent.name} ({agent.id})
              </option>
            ))}
          </select>
        )}
      </Field>
      <Field label="Action starts with">{(id) => <input id={id} value={draft.action ?? ''} onChange={set('action')} placeholder="write:" />}</Field>
      <Field label="From (local time)">{(id) => <input id={id} type="datetime-local" value={draft.from ?? ''} onChange={set('from')} />}</Field>
      <Field label="To (local time)">{(id) => <input id={id} type="datetime-local" value={draft.to ?? ''} onChange={set('to')} />}</Field>
      <Field label="Per page">
        {(id) => (
          <select id={id} value={draft.limit ?? '50'} onChange={set('limit')}>
            {PAGE_SIZES.map((size) => (
              <option key={size}>{size}</option>
            ))}
          </select>
        )}
      </Field>
      <div className="actions">
        <button type="submit" className="primary">
          Apply filters
        </button>
        <Link to="/audit">Clear</Link>
      </div>
    </form>
  );
}

function EntryTable({ entries, onOpen }: { entries: AuditEntry[]; onOpen: (entry: AuditEntry) => void }) {
  if (entries.length === 0) return <p className="muted">No entries match these filters.</p>;
  return (
    <div className="table-scroll">
      <table data-testid="audit-entries">
        <caption className="visually-hidden">Audit entries, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">Decision</th>
            <th scope="col">Agent</th>
            <th scope="col">Action</th>
            <th scope="col">Policy · rule</th>
            <th scope="col">Source</th>
            <th scope="col" className="numeric">
              Latency
            </th>
            <th scope="col">
              <span className="visually-hidden">Details</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {entries.map((entry) => (
            <tr key={entry.id} data-entry-id={entry.id}>
              <td>
                <time dateTime={entry.timestamp}>{dateTime(entry.timestamp)}</time>
              </td>
              <td>
                <span className={`badge badge-${entry.decision}`}>{entry.decision}</span>
                {!entry.enforced && <span className="badge badge-audit">not enforced</span>}
              </td>
              <td>{entry.agentName ?? entry.agentId ?? '—'}</td>
              <td>
                <code>{entry.action}</code>
              </td>
              <td>{entry.policyName ? `${entry.policyName}${entry.rule ? ` · ${entry.rule}` : ''}` : '—'}</td>
              <td>{entry.source}</td>
              <td className="numeric">{milliseconds(entry.latencyMs ?? entry.decisionLatencyMs)}</td>
              <td>
                <button type="button" onClick={() => onOpen(entry)} aria-label={`Details of entry ${entry.seq}`}>
                  Details
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** One entry, every field, in a modal dialog: Escape closes it and focus returns where it was. */
function EntryDetail({ entry, onClose }: { entry: AuditEntry; onClose: () => void }) {
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const element = dialog.current;
    if (element && !element.open) element.showModal();
  }, []);
  const fields: Array<[string, string]> = [
    ['Id', entry.id],
    ['Sequence', String(entry.seq)],
    ['Time', dateTime(entry.timestamp)],
    ['Kind', entry.kind],
    ['Source', entry.source],
    ['Agent', entry.agentId ? `${entry.agentName ?? ''} (${entry.agentId}), ${entry.trustTier ?? 'no tier'}` : '—'],
    ['Action', entry.action],
    ['Request', entry.method ? `${entry.method} ${entry.path ?? ''}` : '—'],
    ['Decision', `${entry.decision}${entry.enforced ? '' : ' (not enforced)'}${entry.rateLimited ? ', rate limited' : ''}`],
    ['Policy', entry.policyName ?? '—'],
    ['Rule', entry.rule ?? '—'],
    ['Reason', entry.reason ?? '—'],
    ['Status', entry.status === null ? '—' : `${entry.status}${entry.upstreamStatus === null ? '' : ` (upstream ${entry.upstreamStatus})`}`],
    ['Latency', `${milliseconds(entry.latencyMs)} (decision ${milliseconds(entry.decisionLatencyMs)})`],
    ['Delegation chain', entry.delegationChain?.join(' → ') ?? '—'],
    ['Trace id', entry.traceId ?? '—'],
  ];
  return (
    <dialog ref={dialog} className="detail" aria-labelledby="entry-title" onClose={onClose} data-testid="entry-detail">
      <div className="section-head">
        <h2 id="entry-title">Entry {entry.seq}</h2>
        <button type="button" onClick={() => dialog.current?.close()}>
          Close
        </button>
      </div>
      <dl className="fields">
        {fields.map(([name, value]) => (
          <div key={name} className="field">
            <dt>{name}</dt>
            <dd>{value}</dd>
          </div>
        ))}
      </dl>
      <h3>Input</h3>
      <pre>{json(entry.input)}</pre>
      <h3>Details</h3>
      <pre>{json(entry.details)}</pre>
    </dialog>
  );
}

function ChainVerification() {
  const { api } = useDashboard();
  const [result, setResult] = useState<AuditVerification | null>(null);
  const [error, setError] = useState<Error | null>(null);
  const [busy, setBusy] = useState(false);
  const verify = () => {
    setBusy(true);
    setError(null);
    api.get<AuditVerification>('/admin/audit/verify').then(
      (verification) => {
        setBusy(false);
        setResult(verification);
      },
      (failure: Error) => {
        setBusy(false);
        setError(failure);
      },
    );
  };
  return (
    <section className="card" aria-labelledby="verify-title">
      <div className="section-head">
        <h2 id="verify-title">Hash chain</h2>
        <button type="button" onClick={verify} disabled={busy}>
          {busy ? 'Verifying…' : 'Verify the chain'}
        </button>
      </div>
      <div role="status" data-testid="chain-result">
        {result && result.ok && (
          <p className="message message-good">
            Intact: {result.checked} entries checked{result.firstSeq !== null && ` (sequence ${result.firstSeq} to ${result.lastSeq})`}.
          </p>
        )}
        {result && !result.ok && result.brokenAt && (
          <p className="message message-error">
            Broken at entry {result.brokenAt.seq} ({result.brokenAt.problem}): {result.brokenAt.message}. {result.checked} entries checked.
          </p>
        )}
        {!result && !error && <p className="muted">Recomputes every entry&apos;s hash and link, and reports the first broken one.</p>}
      </div>
      {error && <ErrorMessage error={error} title="Could not verify the chain" />}
    </section>
  );
}

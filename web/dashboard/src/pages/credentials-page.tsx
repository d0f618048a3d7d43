import { useState, type FormEvent } from 'react';
import { ErrorMessage } from '../components/error-message';
import { Field } from '../components/field';
import { LoadedView } from '../components/loaded-view';
import { SortableTable } from '../components/sortable-table';
import { useDashboard } from '../context';
import { dateTime, relative } from '../format';
import { useLoad } from '../load';
import { CREDENTIAL_TYPES, type Credential, type CredentialType } from '../types';

/**
 * The organization's upstream credentials (GET /admin/credentials, docs/security.md "Upstream
 * credentials"): what the gateway adds to the requests it forwards so agents never hold them.
 * A secret is typed into a password field, sent once and forgotten by the page; no answer holds it.
 */
export function CredentialsPage() {
  const { api } = useDashboard();
  const [notice, setNotice] = useState<string | null>(null);
  const credentials = useLoad((signal) => api.get<{ credentials: Credential[] }>('/admin/credentials', undefined, signal), [api]);
  const changed = (message: string) => {
    setNotice(message);
    credentials.reload();
  };
  return (
    <>
      <h1>Upstream credentials</h1>
      <p className="muted">
        Secrets the gateway adds to the requests it forwards after an allow, replacing any the agent sent: agents never hold them. Values are stored
        encrypted and never shown again, here or anywhere.
      </p>
      <CreateCredential onCreated={(credential) => changed(`Credential ${credential.id} stored for ${targetOf(credential)}.`)} />
      {notice && (
        <p className="message message-info" role="status">
          {notice}
        </p>
      )}
      <section className="card" aria-labelledby="credentials-title">
        <h2 id="credentials-title">All credentials</h2>
        <LoadedView loaded={credentials} what="the credentials">
          {(data) => (
            <SortableTable
              caption="Upstream credentials of the organization"
              testId="credentials"
              rows={data.credentials}
              rowKey={(credential) => credential.id}
              initialSort={{ key: 'created', descending: true }}
              empty="No upstream credentials yet: store the first one above."
              columns={[
                {
                  key: 'target',
                  label: 'For',
                  sortBy: targetOf,
                  render: (credential) => (
                    <>
                      <code>{targetOf(credential)}</code>
                      <div className="muted small">
                        <code>{credential.id}</code>
                      </div>
                    </>
                  ),
                },
                { key: 'placement', label: 'Goes in', sortBy: placementOf, render: placementOf },
                { key: 'edge', label: 'Sidecars', sortBy: (credential) => String(credential.edge), render: (credential) => (credential.edge ? 'yes, sealed' : 'no') },
                { key: 'version', label: 'Version', numeric: true, sortBy: (credential) => credential.version, render: (credential) => credential.version },
                { key: 'created', label: 'Created', sortBy: (credential) => credential.createdAt, render: (credential) => <time title={dateTime(credential.createdAt)}>{relative(credential.createdAt)}</time> },
                {
                  key: 'rotated',
                  label: 'Rotated',
                  sortBy: (credential) => credential.rotatedAt,
                  render: (credential) => (credential.rotatedAt === null ? '—' : <time title={dateTime(credential.rotatedAt)}>{relative(credential.rotatedAt)}</time>),
                },
                {
                  key: 'status',
                  label: 'Status',
                  sortBy: (credential) => (credential.revokedAt === null ? 'active' : 'revoked'),
                  render: (credential) => <span className={`badge badge-${credential.revokedAt === null ? 'active' : 'revoked'}`}>{credential.revokedAt === null ? 'active' : 'revoked'}</span>,
                },
                {
                  key: 'actions',
                  label: 'Change',
                  render: (credential) =>
                    credential.revokedAt === null ? (
                      <div className="actions">
                        <RotateCredential credential={credential} onRotated={changed} />
                        <RevokeCredential credential={credential} onRevoked={changed} />
                      </div>
                    ) : (
                      <span className="muted">revoked {relative(credential.revokedAt)}</span>
                    ),
                },
              ]}
            />
          )}
        </LoadedView>
      </section>
    </>
  );
}

function targetOf(credential: Credential): string {
  return credential.route ?? `MCP server ${credential.mcpServer ?? ''}`;
}

function placementOf(credential: Credential): string {
  if (credential.type === 'bearer') return 'Authorization: Bearer';
  return credential.type === 'header' ? `header ${credential.name ?? ''}` : `query parameter ${credential.name ?? ''}`;
}

/** A password field: the browser neither shows nor offers to remember what is typed. */
function SecretInput({ id, value, onChange }: { id: string; value: string; onChange: (value: string) => void }) {
  return <input id={id} type="password" required autoComplete="new-password" spellCheck={false} value={value} onChange={(event) => onChange(event.target.value)} />;
}

function CreateCredential({ onCreated }: { onCreated: (credential: Credential) => void }) {
  const { api } = useDashboard();
  const [kind, setKind] = useState<'route' | 'mcpServer'>('route');
  const [target, setTarget] = useState('/proxy/');
  const [type, setType] = useState<CredentialType>('header');
  const [name, setName] = useState('');
  const [value, setValue] = useState('');
  const [edge, setEdge] = useState(false);
  const [error, setError] = useState<Error | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    const body = { [kind]: target.trim(), type, ...(type === 'bearer' ? {} : { name: name.trim() }), value, edge };
    api.post<Credential>('/admin/credentials', { json: body }).then(
      (credential) => {
        setBusy(false);
        setValue('');
        setName('');
        onCreated(credential);
      },
      (failure: Error) => {
        setBusy(false);
        setError(failure);
      },
    );
  };
  return (
    <section className="card" aria-labelledby="create-credential-title">
      <h2 id="create-credential-title">Store a credential</h2>
      <form className="form-row" onSubmit={submit}>
        <Field label="For">
          {(id) => (
            <select id={id} value={kind} onChange={(event) => setKind(event.target.value as 'route' | 'mcpServer')}>
              <option value="route">a proxy route</option>
              <option value="mcpServer">an MCP server</option>
            </select>
          )}
        </Field>
        <Field label={kind === 'route' ? 'Route' : 'MCP server'}>
          {(id) => <input id={id} required value={target} onChange={(event) => setTarget(event.target.value)} placeholder={kind === 'route' ? '/proxy/payments' : 'github'} />}
        </Field>
        <Field label="Goes in">
          {(id) => (
            <select id={id} value={type} onChange={(event) => setType(event.target.value as CredentialType)}>
              {CREDENTIAL_TYPES.map((candidate) => (
                <option key={candidate} value={candidate}>
                  {candidate === 'bearer' ? 'Authorization: Bearer' : candidate === 'header' ? 'a header' : 'a query parameter'}
                </option>
              ))}
            </select>
          )}
        </Field>
        {type !== 'bearer' && (
          <Field label={type === 'header' ? 'Header name' : 'Parameter name'}>
            {(id) => <input id={id} required value={name} onChange={(event) => setName(event.target.value)} placeholder={type === 'header' ? 'X-Api-Key' : 'api_key'} />}
          </Field>
        )}
        <Field label="Secret">{(id) => <SecretInput id={id} value={value} onChange={setValue} />}</Field>
        <label className="inline">
          <input type="checkbox" checked={edge} onChange={(event) => setEdge(event.target.checked)} /> Also for sidecars (sealed to each one&apos;s key)
        </label>
        <button type="submit" className="primary" disabled={busy}>
          {busy ? 'Storing…' : 'Store credential'}
        </button>
      </form>
      {error && <ErrorMessage error={error} />}
    </section>
  );
}

/** A new secret for the credential (POST /admin/credentials/:id/rotate), in force on every gateway before the answer. */
function RotateCredential({ credential, onRotated }: { credential: Credential; onRotated: (message: string) => void }) {
  const { api } = useDashboard();
  const [open, setOpen] = useState(false);
  const [value, setValue] = useState('');
  const [error, setError] = useState<Error | null>(null);
  const [busy, setBusy] = useState(false);
  const close = () => {
    setOpen(false);
    setValue('');
    setError(null);
  };
  const submit = (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    api.post<Credential>(`/admin/credentials/${encodeURIComponent(credential.id)}/rotate`, { json: { value } }).then(
      (rotated) => {
        setBusy(false);
        close();
        onRotated(`Credential ${rotated.id} rotated: version ${rotated.version} is in force.`);
      },
      (failure: Error) => {
        setBusy(false);
        setError(failure);
      },
    );
  };
  if (!open)
    return (
      <button type="button" onClick={() => setOpen(true)} aria-label={`Rotate ${credential.id}`}>
        Rotate
      </button>
    );
  return (
    <form className="confirm" onSubmit={submit} aria-label={`New secret for ${credential.id}`}>
      <Field label="New secret">{(id) => <SecretInput id={id} value={value} onChange={setValue} />}</Field>
      <button type="submit" className="primary" disabled={busy}>
        {busy ? 'Rotating…' : 'Rotate'}
      </button>
      <button type="button" onClick={close}>
        Cancel
      </button>
      {error && <ErrorMessage error={error} />}
    </form>
  );
}

/** Revoking erases the secret for good, so it asks once more before DELETE /admin/credentials/:id. */
function RevokeCredential({ credential, onRevoked }: { credential: Credential; onRevoked: (message: string) => void }) {
  const { api } = useDashboard();
  const [confirming, setConfirming] = useState(false);
  const [error, setError] = useState<Error | null>(null);
  const revoke = () => {
    setError(null);
    api.delete<Credential>(`/admin/credentials/${encodeURIComponent(credential.id)}`).then(
      () => {
        setConfirming(false);
        onRevoked(`Credential ${credential.id} revoked: no longer added to any request, its secret erased.`);
      },
      (failure: Error) => setError(failure),
    );
  };
  if (!confirming)
    return (
      <button type="button" className="danger" onClick={() => setConfirming(true)} aria-label={`Revoke ${credential.id}`}>
        Revoke
      </button>
    );
  return (
    <div className="confirm" role="group" aria-label={`Confirm revoking ${credential.id}`}>
      <span>Revoke for good?</span>
      <button type="button" className="danger" onClick={revoke} autoFocus>
        Yes, revoke
      </button>
      <button type="button" onClick={() => setConfirming(false)}>
        Cancel
      </button>
      {error && <ErrorMessage error={error} />}
    </div>
  );
}

import { useState, type FormEvent } from 'react';
import { ApiError } from '../api';
import { ErrorMessage } from '../components/error-message';
import { Field } from '../components/field';
import { useDashboard } from '../context';
import { dateTime, relative } from '../format';
import { useLoad } from '../load';
import type { PolicyGitSource } from '../types';

/**
 * The organization's git source (GET, PUT and DELETE /admin/policy-git; docs/policies.md
 * "Policies from git"): the repository followed, the commit in force and why the latest was
 * refused; a form to follow a branch, and a button to stop following it.
 */
export function GitSourceSection() {
  const { api } = useDashboard();
  // 404 is the answer for "no git source": shown as the form, not as an error.
  const source = useLoad(
    (signal) =>
      api.get<PolicyGitSource>('/admin/policy-git', undefined, signal).catch((error: unknown) => {
        if (error instanceof ApiError && error.status === 404) return null;
        throw error;
      }),
    [api],
  );
  return (
    <section className="card" aria-labelledby="git-source-title">
      <h2 id="git-source-title">Git source</h2>
      {source.error && <ErrorMessage error={source.error} title="Could not load the git source" />}
      {source.data === undefined && !source.error && (
        <p className="muted" role="status">
          Loading the git source…
        </p>
      )}
      {source.data === null && <FollowForm onDone={source.reload} />}
      {source.data && <GitSourceStatus source={source.data} onRemoved={source.reload} />}
    </section>
  );
}

function GitSourceStatus({ source, onRemoved }: { source: PolicyGitSource; onRemoved: () => void }) {
  const { api } = useDashboard();
  const [confirming, setConfirming] = useState(false);
  const [error, setError] = useState<Error | null>(null);
  const stop = () => {
    setError(null);
    api.delete('/admin/policy-git').then(onRemoved, (failure: Error) => setError(failure));
  };
  return (
    <>
      <p className="muted">The policies git owns change only with a commit; the API refuses edits to them.</p>
      <dl className="fields" data-testid="git-source">
        <dt>Repository</dt>
        <dd>
          <code>{source.url}</code>
        </dd>
        <dt>Branch</dt>
        <dd>
          <code>{source.branch}</code> · folder <code>{source.path}</code> · fetched every {Math.round(source.pollMs / 1000)} s{source.signed ? ' · signed commits only' : ''}
        </dd>
        <dt>Commit in force</dt>
        <dd data-testid="git-commit">{source.commit === null ? 'none yet' : <code>{source.commit.slice(0, 12)}</code>}</dd>
        <dt>Checked</dt>
        <dd>{source.checkedAt === null ? 'not yet' : <time title={dateTime(source.checkedAt)}>{relative(source.checkedAt)}</time>}</dd>
      </dl>
      {source.error && (
        <div className="message message-error" role="alert" data-testid="git-refusal">
          <strong>{source.error.commit === null ? 'The latest fetch failed' : `Commit ${source.error.commit.slice(0, 12)} was refused`}: </strong>
          <span>{source.error.message}</span> <span>The last good commit stays in force.</span>
        </div>
      )}
      {!confirming ? (
        <button type="button" onClick={() => setConfirming(true)}>
          Stop following git
        </button>
      ) : (
        <div className="confirm" role="group" aria-label="Confirm stopping git">
          <span>The policies in force stay, and the API may change them again.</span>
          <button type="button" className="danger" onClick={stop} autoFocus>
            Yes, stop following
          </button>
          <button type="button" onClick={() => setConfirming(false)}>
            Cancel
          </button>
        </div>
      )}
      {error && <ErrorMessage error={error} title="Could not stop following git" />}
    </>
  );
}

function FollowForm({ onDone }: { onDone: () => void }) {
  const { api } = useDashboard();
  const [url, setUrl] = useState('');
  const [branch, setBranch] = useState('main');
  const [folder, setFolder] = useState('.');
  const [pollInterval, setPollInterval] = useState('60s');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | null>(null);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    api.request('PUT', '/admin/policy-git', { json: { url, branch, path: folder, pollInterval } }).then(
      () => {
        setBusy(false);
        onDone();
      },
      (failure: Error) => {
        setBusy(false);
        setError(failure);
      },
    );
  };
  return (
    <>
      <p className="muted">
        Not following git: policies change through the API. Following a branch makes each good commit a policy version; a commit whose policy tests fail is refused and the last good one stays in force.
      </p>
      <form className="form-row" onSubmit={submit} aria-label="Follow a git branch">
        <Field label="Repository URL">{(id) => <input id={id} required value={url} onChange={(event) => setUrl(event.target.value)} placeholder="https://git.example.com/acme/policies.git" />}</Field>
        <Field label="Branch">{(id) => <input id={id} required value={branch} onChange={(event) => setBranch(event.target.value)} />}</Field>
        <Field label="Folder">{(id) => <input id={id} required value={folder} onChange={(event) => setFolder(event.target.value)} />}</Field>
        <Field label="Fetch every">{(id) => <input id={id} required value={pollInterval} onChange={(event) => setPollInterval(event.target.value)} />}</Field>
        <button type="submit" className="primary" disabled={busy}>
          {busy ? 'Fetching…' : 'Follow branch'}
        </button>
      </form>
      {error && <ErrorMessage error={error} title="The git source was refused" />}
    </>
  );
}

import { useEffect, useMemo, useRef, useState, type FormEvent } from 'react';
import { Api, ApiError } from './api';
import { ErrorBoundary } from './components/error-boundary';
import { ErrorMessage } from './components/error-message';
import { DashboardContext } from './context';
import { useLoad } from './load';
import { AgentPage } from './pages/agent-page';
import { AgentsPage } from './pages/agents-page';
import { ApprovalsPage } from './pages/approvals-page';
import { AuditPage } from './pages/audit-page';
import { CredentialsPage } from './pages/credentials-page';
import { OverviewPage } from './pages/overview-page';
import { PoliciesPage } from './pages/policies-page';
import { PolicyPage } from './pages/policy-page';
import { SidecarsPage } from './pages/sidecars-page';
import { Link, useRoute } from './router';
import { forgetToken, storedPeriod, storePeriod, storedToken, storeToken } from './session';
import { PERIODS, type Organization, type Period } from './types';

const SECTIONS = [
  { path: '/', label: 'Overview' },
  { path: '/agents', label: 'Agents' },
  { path: '/audit', label: 'Audit' },
  { path: '/policies', label: 'Policies' },
  { path: '/approvals', label: 'Approvals' },
  { path: '/sidecars', label: 'Sidecars' },
  { path: '/credentials', label: 'Credentials' },
] as const;

export function App() {
  const [token, setToken] = useState<string | null>(storedToken);
  const [signedOutBecause, setSignedOutBecause] = useState<string | null>(null);
  const signOut = (reason: string | null) => {
    forgetToken();
    setSignedOutBecause(reason);
    setToken(null);
  };
  if (token === null)
    return (
      <SignIn
        notice={signedOutBecause}
        onSignedIn={(accepted) => {
          storeToken(accepted);
          setToken(accepted);
        }}
      />
    );
  return <Shell token={token} onSignOut={signOut} />;
}

function SignIn({ notice, onSignedIn }: { notice: string | null; onSignedIn: (token: string) => void }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<Error | null>(null);
  const [checking, setChecking] = useState(false);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const candidate = token.trim();
    if (candidate === '') return setError(new Error('Paste the admin token first.'));
    setChecking(true);
    setError(null);
    new Api(candidate).get<Organization>('/admin/organization').then(
      () => onSignedIn(candidate),
      (failure: unknown) => {
        setChecking(false);
        const refused = failure instanceof ApiError && failure.status === 401;
        setError(refused ? new Error('The gateway refused this admin token (401): check it and try again.') : (failure as Error));
      },
    );
  };
  return (
    <main className="sign-in" id="content">
      <form onSubmit={submit} className="card" aria-labelledby="sign-in-title">
        <h1 id="sign-in-title">Agent Governance dashboard</h1>
        <p className="muted">
          Sign in with an admin token of your organization (the gateway prints the first one at its first start). It is kept in this tab&apos;s
          session storage only.
        </p>
        {notice && (
          <p className="message message-info" role="status">
            {notice}
          </p>
        )}
        <label htmlFor="admin-token">Admin token</label>
        <input id="admin-token" type="password" autoComplete="off" spellCheck={false} value={token} onChange={(event) => setToken(event.target.value)} autoFocus />
        <button type="submit" className="primary" disabled={checking}>
          {checking ? 'Signing in…' : 'Sign in'}
        </button>
        {error && <ErrorMessage error={error} />}
      </form>
    </main>
  );
}

function Shell({ token, onSignOut }: { token: string; onSignOut: (reason: string | null) => void }) {
  const [period, setPeriod] = useState<Period>(storedPeriod);
  const api = useMemo(() => new Api(token, () => onSignOut('The gateway refused the admin token (401): it may have been revoked. Sign in again.')), [token]);
  const organization = useLoad((signal) => api.get<Organization>('/admin/organization', undefined, signal), [api]);
  const route = useRoute();
  const main = useRef<HTMLElement>(null);
  const section = SECTIONS.find((candidate) => candidate.path !== '/' && (route.path === candidate.path || route.path.startsWith(`${candidate.path}/`))) ?? SECTIONS[0];

  useEffect(() => {
    document.title = `${section.label} · Agent Governance`;
  }, [section.label]);
  const firstRender = useRef(true);
  useEffect(() => {
    // After a navigation the keyboard starts on the new page, not on the link that led there.
    if (firstRender.current) firstRender.current = false;
    else main.current?.focus();
  }, [route.path]);

  const choosePeriod = (next: Period) => {
    storePeriod(next);
    setPeriod(next);
  };

  return (
    <DashboardContext.Provider value={{ api, period }}>
      <a className="skip-link" href="#content">
        Skip to content
      </a>
      <header className="top">
        <div className="brand">
          <span className="brand-name">Agent Governance</span>
          <span className="muted org-name" data-testid="organization">
            {organization.data ? `${organization.data.name} · ${organization.data.plan}` : organization.error ? 'organization unknown' : ''}
          </span>
        </div>
        <nav aria-label="Dashboard sections" className="sections">
          {SECTIONS.map((candidate) => (
            <Link key={candidate.path} to={candidate.path} aria-current={candidate === section ? 'page' : undefined}>
              {candidate.label}
            </Link>
          ))}
        </nav>
        <fieldset className="period">
          <legend className="visually-hidden">Period</legend>
          {PERIODS.map((candidate) => (
            <label key={candidate} className={candidate === period ? 'chosen' : undefined}>
              <input type="radio" name="period" value={candidate} checked={candidate === period} onChange={() => choosePeriod(candidate)} />
              {candidate}
            </label>
          ))}
        </fieldset>
        <button type="button" className="sign-out" onClick={() => onSignOut(null)}>
          Sign out
        </button>
      </header>
      <main id="content" ref={main} tabIndex={-1}>
        {organization.error && <ErrorMessage error={organization.error} title="Could not load the organization" />}
        <ErrorBoundary resetKey={route.path}>
          <Page path={route.path} />
        </ErrorBoundary>
      </main>
    </DashboardContext.Provider>
  );
}

function Page({ path }: { path: string }) {
  const [, section, id] = path.split('/').map((part) => decodeURIComponent(part));
  switch (section) {
    case '':
      return <OverviewPage />;
    case 'agents':
      return id ? <AgentPage agentId={id} /> : <AgentsPage />;
    case 'audit':
      return <AuditPage />;
    case 'policies':
      return id ? <PolicyPage name={id} /> : <PoliciesPage />;
    case 'approvals':
      return <ApprovalsPage />;
    case 'sidecars':
      return <SidecarsPage />;
    case 'credentials':
      return <CredentialsPage />;
    default:
      return (
        <section>
          <h1>Not found</h1>
          <p className="message message-error" role="alert">
            The dashboard has no page at {path}. <Link to="/">Go to the overview</Link>.
          </p>
        </section>
      );
  }
}

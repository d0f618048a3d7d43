import { useState } from 'react';
import { LoadedView } from '../components/loaded-view';
import { useDashboard } from '../context';
import { dateTime } from '../format';
import { useLoad } from '../load';
import { Link, withQuery } from '../router';
import type { PolicyDetail, PolicyVersion } from '../types';

/** One policy as written (GET /admin/policies/:name) and its versions (GET /admin/policies/versions). */
export function PolicyPage({ name }: { name: string }) {
  const { api } = useDashboard();
  const policy = useLoad((signal) => api.get<PolicyDetail>(`/admin/policies/${encodeURIComponent(name)}`, undefined, signal), [api, name]);
  const versions = useLoad((signal) => api.get<{ versions: PolicyVersion[] }>('/admin/policies/versions', { limit: 1000 }, signal), [api]);
  const [shown, setShown] = useState<PolicyVersion | null>(null);
  return (
    <>
      <p>
        <Link to="/policies">← All policies</Link>
      </p>
      <h1>{name}</h1>
      <LoadedView loaded={policy} what="the policy">
        {(data) => (
          <section className="card" aria-labelledby="source-title">
            <div className="section-head">
              <h2 id="source-title">
                Source · version {data.version} · {data.origin === 'file' ? 'from the policies file' : 'set through the API'}
              </h2>
              <Link to={withQuery('/policies', { draft: data.name })}>Draft a change in the lab</Link>
            </div>
            {data.description && <p>{data.description}</p>}
            <pre className="source" data-testid="policy-source">
              {data.source}
            </pre>
          </section>
        )}
      </LoadedView>
      <section className="card" aria-labelledby="versions-title">
        <h2 id="versions-title">Versions</h2>
        <LoadedView loaded={versions} what="the policy versions">
          {(data) => {
            const own = data.versions.filter((version) => version.policy === name);
            if (own.length === 0) return <p className="muted">No recorded change of this policy (the history keeps the last 1,000 changes).</p>;
            return (
              <div className="table-scroll">
                <table data-testid="policy-versions">
                  <caption className="visually-hidden">Changes of {name}, newest first</caption>
                  <thead>
                    <tr>
                      <th scope="col">Version</th>
                      <th scope="col">Change</th>
                      <th scope="col">By</th>
                      <th scope="col">When</th>
                      <th scope="col">
                        <span className="visually-hidden">Source</span>
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {own.map((version) => (
                      <tr key={version.version}>
                        <td className="numeric">{version.version}</td>
                        <td>{version.kind}</td>
                        <td>
                          <code>{version.actor}</code>
                        </td>
                        <td>{dateTime(version.createdAt)}</td>
                        <td>
                          {version.source !== null && (
                            <button type="button" onClick={() => setShown(version)} aria-pressed={shown?.version === version.version}>
                              Show version {version.version}
                            </button>
                          )}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            );
          }}
        </LoadedView>
        {shown && (
          <div className="version-source">
            <h3>Version {shown.version}</h3>
            <pre className="source">{shown.source}</pre>
          </div>
        )}
      </section>
    </>
  );
}

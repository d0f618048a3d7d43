import { LoadedView } from '../components/loaded-view';
import { useDashboard } from '../context';
import { count, dateTime, duration, relative } from '../format';
import { useLoad } from '../load';
import type { Sidecar } from '../types';

/** Sidecars fetch the bundle every minute by default (docs/sidecar.md, BUNDLE_SYNC_INTERVAL): ten minutes without is worth a look. */
const STALE_SYNC_MS = 10 * 60_000;

/** The edge fleet (GET /admin/sidecars): bundle age, last sync, and whether every edge decision reached the trail (docs/sidecar.md). */
export function SidecarsPage() {
  const { api } = useDashboard();
  const sidecars = useLoad((signal) => api.get<{ sidecars: Sidecar[] }>('/admin/sidecars', undefined, signal), [api]);
  return (
    <>
      <h1>Sidecars</h1>
      <section className="card" aria-labelledby="fleet-title">
        <div className="section-head">
          <h2 id="fleet-title">Fleet</h2>
          <button type="button" onClick={sidecars.reload}>
            Refresh
          </button>
        </div>
        <p className="muted small">
          Every edge decision reached the audit trail when a sidecar shows no gaps, nothing unforwarded and nothing renumbered.
        </p>
        <LoadedView loaded={sidecars} what="the sidecars">
          {(data) => (data.sidecars.length === 0 ? <p className="muted">No sidecar has fetched a bundle yet (docs/sidecar.md tells how to start one).</p> : <Fleet sidecars={data.sidecars} />)}
        </LoadedView>
      </section>
    </>
  );
}

function auditState(sidecar: Sidecar): { label: string; tone: string } {
  if (sidecar.gaps.length > 0) return { label: `${sidecar.gaps.length} gap${sidecar.gaps.length === 1 ? '' : 's'}`, tone: 'deny' };
  if (sidecar.renumbered > 0) return { label: 'renumbered', tone: 'deny' };
  if (sidecar.unforwarded > 0) return { label: 'catching up', tone: 'audit' };
  return { label: 'complete', tone: 'allow' };
}

function Fleet({ sidecars }: { sidecars: Sidecar[] }) {
  const now = Date.now();
  return (
    <div className="table-scroll">
      <table data-testid="sidecars">
        <caption className="visually-hidden">Sidecars that fetched a bundle</caption>
        <thead>
          <tr>
            <th scope="col">Sidecar</th>
            <th scope="col">Mode</th>
            <th scope="col">Bundle age</th>
            <th scope="col">Last sync</th>
            <th scope="col">Audit</th>
            <th scope="col" className="numeric">
              Received
            </th>
            <th scope="col" className="numeric">
              Last seq
            </th>
            <th scope="col" className="numeric">
              Unforwarded
            </th>
            <th scope="col">Gaps</th>
          </tr>
        </thead>
        <tbody>
          {sidecars.map((sidecar) => {
            const bundleAge = sidecar.bundleVersion ? now - new Date(sidecar.bundleVersion).getTime() : null;
            const sinceSync = sidecar.lastSync ? now - new Date(sidecar.lastSync).getTime() : null;
            const audit = auditState(sidecar);
            return (
              <tr key={sidecar.id} data-sidecar-id={sidecar.id}>
                <td>
                  <code>{sidecar.id}</code>
                </td>
                <td>{sidecar.mode ?? '—'}</td>
                <td title={sidecar.bundleVersion ? `bundle ${sidecar.bundleVersion}` : undefined}>
                  {bundleAge === null || Number.isNaN(bundleAge) ? '—' : duration(Math.max(0, bundleAge))}
                </td>
                <td className={sinceSync !== null && sinceSync > STALE_SYNC_MS ? 'stale' : undefined}>
                  <time title={dateTime(sidecar.lastSync)}>{relative(sidecar.lastSync)}</time>
                </td>
                <td>
                  <span className={`badge badge-${audit.tone}`}>{audit.label}</span>
                  {sidecar.renumbered > 0 && <div className="small">{count(sidecar.renumbered)} renumbered</div>}
                </td>
                <td className="numeric">{count(sidecar.received)}</td>
                <td className="numeric">{sidecar.lastSeq}</td>
                <td className="numeric">{count(sidecar.unforwarded)}</td>
                <td>
                  {sidecar.gaps.length === 0 ? (
                    'none'
                  ) : (
                    <ul className="gaps">
                      {sidecar.gaps.map((gap) => (
                        <li key={gap.first}>
                          {gap.first === gap.last ? gap.first : `${gap.first}–${gap.last}`}: {gap.message}
                        </li>
                      ))}
                    </ul>
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

/** Which way of a change is good news: fewer milliseconds is, more requests is neither. */
export type Better = 'up' | 'down' | 'neither';

interface StatCardProps {
  label: string;
  value: string;
  /** The change against the previous period, in the unit `changeText` writes. */
  change: number;
  changeText: string;
  better: Better;
  period: string;
}

/** One number of the overview with its trend arrow against the previous period of the same length. */
export function StatCard({ label, value, change, changeText, better, period }: StatCardProps) {
  const direction = change > 0 ? 'up' : change < 0 ? 'down' : 'flat';
  const arrow = direction === 'up' ? '▲' : direction === 'down' ? '▼' : '→';
  const tone = direction === 'flat' || better === 'neither' ? 'neutral' : direction === better ? 'good' : 'bad';
  const said = direction === 'flat' ? 'unchanged' : `${direction} ${changeText}`;
  return (
    <div className="card stat" data-testid={`stat-${label}`}>
      <div className="stat-label">{label}</div>
      <div className="stat-value">{value}</div>
      <div className={`trend trend-${tone}`} aria-label={`${said} against the previous ${period}`}>
        <span aria-hidden="true">{arrow}</span> {direction === 'flat' ? 'no change' : changeText} <span className="muted">vs previous {period}</span>
      </div>
    </div>
  );
}

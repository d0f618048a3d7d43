const integer = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
const decimal = new Intl.NumberFormat('en-US', { maximumFractionDigits: 2 });

export function count(value: number): string {
  return integer.format(value);
}

export function percent(value: number): string {
  return `${decimal.format(value)}%`;
}

export function milliseconds(value: number | null | undefined): string {
  if (value === null || value === undefined) return '—';
  return `${decimal.format(value)} ms`;
}

/** A timestamp as the admin reads it: local date and time, to the second. */
export function dateTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return date.toLocaleString('en-GB', { year: 'numeric', month: 'short', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

/** How long ago (or, for a time ahead, in how long): "3 min ago", "in 2 h". */
export function relative(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '—';
  const at = new Date(iso).getTime();
  if (Number.isNaN(at)) return iso;
  const text = duration(Math.abs(now - at));
  return at <= now ? `${text} ago` : `in ${text}`;
}

export function duration(ms: number): string {
  const seconds = Math.round(ms / 1000);
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.round(minutes / 6) / 10;
  if (hours < 48) return `${decimal.format(hours)} h`;
  return `${decimal.format(Math.round(hours / 2.4) / 10)} d`;
}

/** Pretty JSON for the detail views. */
export function json(value: unknown): string {
  return JSON.stringify(value, null, 2) ?? 'null';
}

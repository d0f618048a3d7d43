import type { Alert } from './alert';

/** The shortest time between two warnings of dropped alerts. */
const INTERVAL_MS = 1000;
/** Alert ids a warning names; the count says how many more there were. */
const IDS_NAMED = 20;

type WarningLog = (message: string, fields: Record<string, unknown>) => void;

/** Drops of one kind (one message) since the last warning. */
interface Tally {
  provider: string | undefined;
  dropped: number;
  alertIds: string[];
  triggers: Set<string>;
}

/**
 * The warnings of dropped alerts, at most one a second for each kind of drop. A burst past
 * ALERT_RATE_LIMIT drops alerts from every batch the request thread hands over (one each 10 ms),
 * and a line per batch flooded the log with 100 warnings a second while it lasted (an outage
 * that fails every request, with `ALERT_ON=error`, lasts). The first drop is told at once; those
 * of the next second are summed in one line: how many, the first ids, their triggers.
 */
export class DropWarnings {
  private readonly tallies = new Map<string, Tally>();
  private lastAt = -Infinity;
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly warn: WarningLog) {}

  add(alerts: readonly Alert[], message: string, provider?: string): void {
    const tally = this.tallies.get(message) ?? { provider, dropped: 0, alertIds: [], triggers: new Set<string>() };
    this.tallies.set(message, tally);
    tally.dropped += alerts.length;
    for (const alert of alerts) {
      if (tally.alertIds.length < IDS_NAMED) tally.alertIds.push(alert.id);
      tally.triggers.add(alert.trigger);
    }
    const wait = this.lastAt + INTERVAL_MS - Date.now();
    if (wait <= 0) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), wait);
  }

  /** Warns of every drop not yet told. */
  flush(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    if (this.tallies.size === 0) return;
    this.lastAt = Date.now();
    for (const [message, { provider, dropped, alertIds, triggers }] of this.tallies) {
      const fields = { dropped, alertIds, triggers: [...triggers] };
      this.warn(message, provider === undefined ? fields : { ...fields, provider });
    }
    this.tallies.clear();
  }
}

import { AppError } from '../../core/common/app-error';
import { ErrorCode } from '../../core/common/error-code';
import { HOUR_MS } from '../audit/audit-rollups';
import { Period, PERIODS } from '../audit/audit.dto';

const PERIOD_HOURS: Record<Period, number> = { '24h': 24, '7d': 7 * 24, '30d': 30 * 24 };

/**
 * The hours a period covers, as the hourly rollups count them: the current UTC hour and the
 * ones before it (24 for `24h`), so `[from, to)`; the prior period is the same number of hours
 * just before, `[priorFrom, from)`.
 */
export interface AnalyticsWindow {
  period: Period;
  from: Date;
  to: Date;
  priorFrom: Date;
}

/** The period asked for (`fallback` when absent), or 400 `invalid_period`. */
export function parsePeriod(value: unknown, fallback: Period): Period {
  if (value === undefined) return fallback;
  if (typeof value === 'string' && (PERIODS as readonly string[]).includes(value)) return value as Period;
  throw new AppError(ErrorCode.InvalidPeriod, `period must be one of: ${PERIODS.join(', ')}`);
}

/** The window of `period` at `nowMs`. */
export function analyticsWindow(period: Period, nowMs: number): AnalyticsWindow {
  const span = PERIOD_HOURS[period] * HOUR_MS;
  const to = nowMs - (((nowMs % HOUR_MS) + HOUR_MS) % HOUR_MS) + HOUR_MS;
  return { period, from: new Date(to - span), to: new Date(to), priorFrom: new Date(to - 2 * span) };
}

import type { Period } from './types';
import { PERIODS } from './types';

/**
 * The admin token lives in session storage: it survives a reload but not the tab, and never
 * reaches a cookie the browser would send on its own.
 */
const TOKEN_KEY = 'agentgov.adminToken';
const PERIOD_KEY = 'agentgov.period';

export function storedToken(): string | null {
  return window.sessionStorage.getItem(TOKEN_KEY);
}

export function storeToken(token: string): void {
  window.sessionStorage.setItem(TOKEN_KEY, token);
}

export function forgetToken(): void {
  window.sessionStorage.removeItem(TOKEN_KEY);
}

export function storedPeriod(): Period {
  const period = window.sessionStorage.getItem(PERIOD_KEY);
  return (PERIODS as readonly string[]).includes(period ?? '') ? (period as Period) : '24h';
}

export function storePeriod(period: Period): void {
  window.sessionStorage.setItem(PERIOD_KEY, period);
}

const DURATION_PATTERN = /^(\d+(?:\.\d+)?)([smhd])$/;

const UNIT_MS: Readonly<Record<string, number>> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Parses `30s`, `90m`, `24h`, `1d` (a number and one unit) into milliseconds; throws on anything else. */
export function parseDuration(text: string): number {
  const match = DURATION_PATTERN.exec(text);
  if (match === null) {
    throw new Error(`invalid duration "${text}": expected a number followed by s, m, h or d (e.g. 30s, 90m, 24h, 1d)`);
  }
  const ms = Math.round(Number(match[1]) * UNIT_MS[match[2]]);
  if (!Number.isSafeInteger(ms)) throw new Error(`invalid duration "${text}": too large`);
  return ms;
}

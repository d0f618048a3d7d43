import { randomHex } from '../common/random-hex';

const PREFIX = 'aud_';

/**
 * A decision's id (its audit entry's id): `aud_`, the decision's second as 8 hex digits, then 64
 * random bits. Same length as other ids; the time lets a later outcome find its decision in a
 * day-partitioned trail by primary key (`ts`, `id`) without scanning it (decision-links.ts).
 */
export function decisionIdAt(nowMs: number): string {
  return `${PREFIX}${Math.floor(nowMs / 1000).toString(16).padStart(8, '0').slice(-8)}${randomHex(8)}`;
}

/** The second (ms since the epoch) a decision id was made in, else undefined (an id of another form). */
export function decisionSecondOf(id: string): number | undefined {
  if (id.length !== PREFIX.length + 24 || !id.startsWith(PREFIX)) return undefined;
  const seconds = Number.parseInt(id.slice(PREFIX.length, PREFIX.length + 8), 16);
  return Number.isSafeInteger(seconds) && /^[0-9a-f]{24}$/.test(id.slice(PREFIX.length)) ? seconds * 1000 : undefined;
}

/** The span id of a decision's span (docs/observability.md "Traces"): the 64 random bits of its id, as 16 hex characters. */
export function decisionSpanId(id: string): string {
  return id.slice(-16);
}

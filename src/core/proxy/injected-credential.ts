import type { InjectedCredential } from '../decision/upstream-credentials';

/*
 * Where an injected credential goes in a forwarded request (docs/proxy.md "Upstream
 * credentials"). Whatever the agent sent in the same place is replaced: its header of that
 * name, its Authorization (always dropped), every query parameter of that name.
 */

/** The request headers a credential adds (lower-case names, as node gives incoming ones). */
export function credentialHeaders(credential: InjectedCredential | undefined): Record<string, string> | undefined {
  if (credential === undefined) return undefined;
  const placement = credential.placement;
  if (placement.type === 'bearer') return { authorization: `Bearer ${credential.value}` };
  if (placement.type === 'header') return { [placement.name.toLowerCase()]: credential.value };
  return undefined;
}

/** The query name a credential takes, when it goes in the query. */
export function credentialQueryName(credential: InjectedCredential | undefined): string | undefined {
  return credential?.placement.type === 'query' ? credential.placement.name : undefined;
}

/**
 * `query` (no `?`) without the parameters named `name`, however their name is escaped: what a
 * decision token's hash covers, the verifier dropping the same parameter (docs/security.md).
 */
export function queryWithout(query: string, name: string): string {
  if (query === '') return query;
  return query
    .split('&')
    .filter((item) => parameterName(item) !== name)
    .join('&');
}

/** `query` with the credential's parameter appended. */
export function queryWith(query: string, name: string, value: string): string {
  const parameter = `${encodeURIComponent(name)}=${encodeURIComponent(value)}`;
  return query === '' ? parameter : `${query}&${parameter}`;
}

function parameterName(item: string): string {
  const equals = item.indexOf('=');
  const raw = (equals === -1 ? item : item.slice(0, equals)).replace(/\+/g, ' ');
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

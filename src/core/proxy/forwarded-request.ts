import type { InjectedCredential } from '../decision/upstream-credentials';
import { ServiceHeader } from '../common/service-header';
import { credentialHeaders, credentialQueryName, queryWith, queryWithout } from './injected-credential';
import type { ProxyTarget } from './proxy-path';

const TOKEN_HEADER = ServiceHeader.DecisionToken.toLowerCase();

/** What an allowed request becomes upstream: its target, and the headers the gateway adds. */
export interface ForwardedRequest {
  /** Path and query sent, the credential's query parameter included. */
  sent: string;
  /** Path and query a decision token's hash covers: the credential's parameter left out. */
  hashed: string;
  /** The credential's query parameter, named in the token (`cq`). */
  queryCredential?: string;
  /** The credential's query parameter and value, taken out of a Location the upstream answers. */
  queryValue?: { name: string; value: string };
  /** The credential's headers and the decision token, if any. */
  headersWith(token: string | undefined): Record<string, string> | undefined;
}

export function forwardedRequest(target: ProxyTarget, credential: InjectedCredential | undefined): ForwardedRequest {
  const queryName = credentialQueryName(credential);
  const query = queryName === undefined ? target.query : queryWithout(target.query, queryName);
  const hashed = `/${target.path}${query === '' ? '' : `?${query}`}`;
  const sent = queryName === undefined ? hashed : `/${target.path}?${queryWith(query, queryName, credential!.value)}`;
  const added = credentialHeaders(credential);
  return {
    sent,
    hashed,
    queryCredential: queryName,
    queryValue: queryName === undefined ? undefined : { name: queryName, value: credential!.value },
    headersWith: (token) => (token === undefined ? added : { ...added, [TOKEN_HEADER]: token }),
  };
}

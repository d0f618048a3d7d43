/*
 * Upstream credentials (docs/security.md "Upstream credentials"): a secret an admin stores for a
 * route, which the gateway (or the sidecar, for credentials marked for the edge) adds to a
 * request it forwards after an allow, so agents never hold it.
 */

/** Where a credential goes in the forwarded request. */
export type CredentialPlacement = { type: 'header'; name: string } | { type: 'bearer' } | { type: 'query'; name: string };

/** A credential ready to inject: its id (what the audit entry names) and its value. */
export interface InjectedCredential {
  id: string;
  placement: CredentialPlacement;
  value: string;
}

/** The credentials in force for one organization, by route, as the proxy and MCP ask for them. */
export interface UpstreamCredentials {
  /** The credential of the longest `/proxy/<prefix>` route covering `path` (no leading slash). */
  forProxy(orgId: string, path: string): InjectedCredential | undefined;
  /** The credential of an MCP server. */
  forMcpServer(orgId: string, server: string): InjectedCredential | undefined;
}

export const UPSTREAM_CREDENTIALS = Symbol('UpstreamCredentials');

/** No credential anywhere: a host without a credential store. */
export const NO_CREDENTIALS: UpstreamCredentials = { forProxy: () => undefined, forMcpServer: () => undefined };

/** What a route of a credential names: a proxy prefix (no slashes at either end; '' is all of /proxy) or an MCP server. */
export type CredentialRoute = { kind: 'proxy'; prefix: string } | { kind: 'mcp'; server: string };

/**
 * The credentials of every organization, indexed for the request path: per organization a map of
 * proxy prefixes and one of MCP servers. A lookup costs one map read per leading segment of the
 * path (bounded by the path's length), nothing when the organization has none.
 */
export class CredentialIndex implements UpstreamCredentials {
  private readonly orgs = new Map<string, { proxy: Map<string, InjectedCredential>; mcp: Map<string, InjectedCredential> }>();

  set(orgId: string, route: CredentialRoute, credential: InjectedCredential): void {
    let org = this.orgs.get(orgId);
    if (org === undefined) this.orgs.set(orgId, (org = { proxy: new Map(), mcp: new Map() }));
    if (route.kind === 'proxy') org.proxy.set(route.prefix.toLowerCase(), credential);
    else org.mcp.set(route.server, credential);
  }

  /** Removes the credential `id` wherever it is. */
  delete(id: string): void {
    for (const [orgId, org] of this.orgs) {
      for (const [key, credential] of org.proxy) if (credential.id === id) org.proxy.delete(key);
      for (const [key, credential] of org.mcp) if (credential.id === id) org.mcp.delete(key);
      if (org.proxy.size === 0 && org.mcp.size === 0) this.orgs.delete(orgId);
    }
  }

  clear(): void {
    this.orgs.clear();
  }

  forProxy(orgId: string, path: string): InjectedCredential | undefined {
    const routes = this.orgs.get(orgId)?.proxy;
    if (routes === undefined || routes.size === 0) return undefined;
    // Matched case-insensitively, as actions are (docs/proxy.md): a prefix guards every spelling of its path.
    const lower = path.toLowerCase();
    for (let end = lower.length; end > 0; end = lower.lastIndexOf('/', end - 1)) {
      const found = routes.get(lower.slice(0, end));
      if (found !== undefined) return found;
    }
    return routes.get('');
  }

  forMcpServer(orgId: string, server: string): InjectedCredential | undefined {
    return this.orgs.get(orgId)?.mcp.get(server);
  }
}

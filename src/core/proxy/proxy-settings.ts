/** What the governed proxy reads of its host's configuration (the gateway's or the sidecar's). */
export interface ProxySettings {
  /** UPSTREAM_URL: target of `/proxy/*`; unset, every allowed request is answered 502 `no_upstream`. */
  upstreamUrl?: string;
  /** UPSTREAM_TIMEOUT_MS: time allowed for the upstream's response headers and body gaps. */
  timeoutMs: number;
  /** PROXY_MAX_BODY_BYTES: largest request body streamed through. */
  maxBodyBytes: number;
  /** MAX_JSON_BYTES: largest body read for a policy to inspect. */
  maxInspectedBytes: number;
  /** TRUSTED_PROXIES: addresses whose X-Forwarded-* headers are kept. */
  trustedProxies: readonly string[];
}

export const PROXY_SETTINGS = Symbol('ProxySettings');

import type { IncomingMessage } from 'node:http';
import { AppError } from '../common/app-error';
import { ErrorCode } from '../common/error-code';

/** Names a local client reaches the process by: a DNS-rebinding page cannot make its browser send them. */
const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * DNS-rebinding protection of `/mcp/*` (the MCP transport's security warning, docs/mcp.md):
 * `Host`, and `Origin` when a browser sends one, must name the gateway: PUBLIC_URL's host, a
 * name of MCP_ALLOWED_HOSTS, or a loopback name (any port). Else 403, before anything is read.
 */
export class McpHostCheck {
  private readonly names = new Set<string>();

  constructor(publicUrl: string | undefined, allowedHosts: readonly string[]) {
    if (publicUrl !== undefined) {
      const url = new URL(publicUrl);
      this.names.add(url.host.toLowerCase());
      this.names.add(url.hostname.toLowerCase());
    }
    for (const host of allowedHosts) this.names.add(host.toLowerCase());
  }

  check(request: IncomingMessage): void {
    const host = request.headers.host;
    if (host === undefined || !this.allows(host)) throw new AppError(ErrorCode.Forbidden, `Host ${JSON.stringify(host ?? '')} is not a name of this gateway (PUBLIC_URL, MCP_ALLOWED_HOSTS)`);
    const origin = request.headers.origin;
    if (origin === undefined) return;
    let originHost: string;
    try {
      originHost = new URL(origin).host;
    } catch {
      throw new AppError(ErrorCode.Forbidden, `Origin ${JSON.stringify(origin)} is not a URL`);
    }
    if (!this.allows(originHost)) throw new AppError(ErrorCode.Forbidden, `Origin ${JSON.stringify(origin)} is not a name of this gateway (PUBLIC_URL, MCP_ALLOWED_HOSTS)`);
  }

  private allows(host: string): boolean {
    const lower = host.toLowerCase();
    if (this.names.has(lower)) return true;
    const name = lower.startsWith('[') ? lower.slice(0, lower.indexOf(']') + 1) : lower.split(':')[0];
    return LOOPBACK.has(name) || this.names.has(name);
  }
}

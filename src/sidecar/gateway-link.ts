import { SidecarHeader } from '../bundles/sidecar-header';
import { ServiceHeader } from '../common/service-header';
import type { SidecarConfig } from '../config/sidecar-config';

const REQUEST_TIMEOUT_MS = 10_000;

/** An answer of the gateway, or `unreachable` when none came. */
export type GatewayAnswer = { status: number; headers: Headers; text: string } | 'unreachable';

/**
 * The sidecar's connection to its gateway (SPEC.md: "Edge sidecar to gateway uses the
 * ADMIN_TOKEN variable"), and what /health says of it: reachable when its last call got an
 * answer.
 */
export class GatewayLink {
  reachable = false;
  lastContactMs: number | null = null;

  constructor(
    private readonly config: SidecarConfig,
    readonly sidecarId: string,
  ) {}

  async get(path: string, headers: Record<string, string> = {}): Promise<GatewayAnswer> {
    return this.call('GET', path, headers);
  }

  async post(path: string, body: string | Buffer): Promise<GatewayAnswer> {
    return this.call('POST', path, { 'content-type': 'application/json' }, body);
  }

  private async call(method: string, path: string, headers: Record<string, string>, body?: string | Buffer): Promise<GatewayAnswer> {
    try {
      const response = await fetch(`${this.config.gatewayUrl}${path}`, {
        method,
        body,
        headers: {
          ...headers,
          [ServiceHeader.AdminToken]: this.config.adminToken,
          [SidecarHeader.Id]: this.sidecarId,
          [SidecarHeader.Mode]: this.config.mode,
        },
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      const text = await response.text();
      this.reachable = true;
      this.lastContactMs = Date.now();
      return { status: response.status, headers: response.headers, text };
    } catch {
      this.reachable = false;
      return 'unreachable';
    }
  }
}

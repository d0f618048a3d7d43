import http from 'node:http';
import https from 'node:https';
import type { Logger } from 'pino';
import { SidecarHeader } from '../core/edge-protocol/sidecar-protocol';
import { ServiceHeader } from '../core/common/service-header';
import type { SidecarConfig } from './sidecar-config';

const REQUEST_TIMEOUT_MS = 10_000;
/**
 * Largest answer to a GET (the bundle) read: far above a bundle of 100,000 agents, and a
 * misconfigured or hostile GATEWAY_URL streaming hundreds of megabytes must not hold the
 * sidecar's memory or stall the event loop that answers /enforce while it is parsed.
 */
export const MAX_GATEWAY_ANSWER_BYTES = 64 * 1024 * 1024;

/** Largest answer to postJson read: its answers are a few hundred bytes. */
const MAX_SMALL_ANSWER_BYTES = 64 * 1024;

/** An answer of the gateway, or `unreachable` when none came. */
export type GatewayAnswer = { status: number; headers: Headers; text: string } | 'unreachable';

/**
 * The sidecar's connection to its gateway, authenticated by ADMIN_TOKEN (docs/sidecar.md
 * "Configuration"), and what /health says of it: reachable when its last call got an
 * answer. The log says when the gateway goes away (a warning, once) and when it is back.
 */
export class GatewayLink {
  reachable = false;
  lastContactMs: number | null = null;
  /** One kept-alive connection for the forwarder's batches. */
  private readonly agent: http.Agent;
  /** Since when no call got an answer (Date.now()); null while the gateway answers. */
  private awaySinceMs: number | null = null;

  constructor(
    private readonly config: SidecarConfig,
    readonly sidecarId: string,
    private readonly logger: Logger,
  ) {
    const options = { keepAlive: true, maxSockets: 1 };
    this.agent = config.gatewayUrl.startsWith('https:') ? new https.Agent(options) : new http.Agent(options);
  }

  /** The answer to `GET path`; `too_large` past MAX_GATEWAY_ANSWER_BYTES (the rest is not read). */
  async get(path: string, headers: Record<string, string> = {}): Promise<GatewayAnswer | 'too_large'> {
    try {
      const response = await fetch(`${this.config.gatewayUrl}${path}`, { method: 'GET', headers: this.headers(headers), signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
      const text = await boundedText(response, MAX_GATEWAY_ANSWER_BYTES);
      const answer = this.answered(response.status, response.headers, text ?? '');
      return text === null ? 'too_large' : answer;
    } catch {
      return this.unreachable();
    }
  }

  /** The answer to `POST path` with a small JSON body, given up after `timeoutMs` (a budget lease, asked for on the request path). */
  async postJson(path: string, body: unknown, timeoutMs: number): Promise<GatewayAnswer> {
    try {
      const response = await fetch(`${this.config.gatewayUrl}${path}`, { method: 'POST', headers: this.headers({ 'content-type': 'application/json' }), body: JSON.stringify(body), signal: AbortSignal.timeout(timeoutMs) });
      const text = await boundedText(response, MAX_SMALL_ANSWER_BYTES);
      return this.answered(response.status, response.headers, text ?? '');
    } catch {
      return this.unreachable();
    }
  }

  /**
   * POSTs a JSON body given in parts (the forwarder's batch: its head, the WAL's bytes, its
   * tail), written as they are. On node:http rather than fetch: fetch copies the body and costs
   * far more per call, and the forwarder runs on the event loop that answers /enforce.
   */
  post(path: string, parts: readonly Buffer[]): Promise<GatewayAnswer> {
    return new Promise((resolve) => {
      let settled = false;
      const settle = (answer: () => GatewayAnswer) => {
        if (settled) return;
        settled = true;
        resolve(answer());
      };
      const url = new URL(`${this.config.gatewayUrl}${path}`);
      const transport = url.protocol === 'https:' ? https : http;
      const request = transport.request(url, { method: 'POST', agent: this.agent, headers: this.headers({ 'content-type': 'application/json', 'content-length': String(totalLength(parts)) }) }, (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => settle(() => this.answered(response.statusCode ?? 0, headersOf(response), Buffer.concat(chunks).toString('utf8'))));
        // A connection lost mid-answer: no 'end'.
        response.on('close', () => settle(() => this.unreachable()));
      });
      request.on('error', () => settle(() => this.unreachable()));
      request.setTimeout(REQUEST_TIMEOUT_MS, () => request.destroy(new Error('gateway did not answer in time')));
      for (const part of parts) request.write(part);
      request.end();
    });
  }

  /** Closes the forwarder's kept-alive connection (shutdown). */
  close(): void {
    this.agent.destroy();
  }

  private headers(extra: Record<string, string>): Record<string, string> {
    return { ...extra, [ServiceHeader.AdminToken]: this.config.adminToken, [SidecarHeader.Id]: this.sidecarId, [SidecarHeader.Mode]: this.config.mode };
  }

  private answered(status: number, headers: Headers, text: string): GatewayAnswer {
    this.reachable = true;
    this.lastContactMs = Date.now();
    if (this.awaySinceMs !== null) {
      this.logger.info({ gateway: this.config.gatewayUrl, awayMs: this.lastContactMs - this.awaySinceMs }, 'gateway reachable again: bundle sync and audit forwarding resume');
      this.awaySinceMs = null;
    }
    return { status, headers, text };
  }

  private unreachable(): 'unreachable' {
    this.reachable = false;
    if (this.awaySinceMs === null) {
      this.awaySinceMs = Date.now();
      this.logger.warn(
        { gateway: this.config.gatewayUrl, lastContact: this.lastContactMs === null ? null : new Date(this.lastContactMs).toISOString() },
        'gateway unreachable: deciding on the bundle in force, audit entries kept in CACHE_DIR until it is back',
      );
    }
    return 'unreachable';
  }
}

/** The body as text, or null once it exceeds `limit` bytes (the stream is then cancelled). */
async function boundedText(response: Response, limit: number): Promise<string | null> {
  if (Number(response.headers.get('content-length') ?? 0) > limit) {
    await response.body?.cancel();
    return null;
  }
  const chunks: Uint8Array[] = [];
  let length = 0;
  for await (const chunk of response.body ?? []) {
    length += chunk.length;
    // Leaving the loop cancels the stream (the iterator's return), which closes the connection.
    if (length > limit) return null;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function totalLength(parts: readonly Buffer[]): number {
  let length = 0;
  for (const part of parts) length += part.length;
  return length;
}

function headersOf(response: http.IncomingMessage): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(response.headers)) {
    if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  return headers;
}

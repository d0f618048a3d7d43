import { Readable } from 'node:stream';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { Agent, Dispatcher } from 'undici';
import type { InjectedCredential } from '../decision/upstream-credentials';

/** Statuses whose response has no body (a Response with one would throw). */
const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

/**
 * The HTTP the gateway's upstream MCP transports speak (docs/mcp.md, "The relay"): the SDK's
 * client transport, given this `fetch`, which sends each request with undici's `request` over
 * one keep-alive agent instead of Node's fetch.
 *
 * Node's fetch keeps every exchange alive until a full garbage collection: the SDK hands each
 * request its session's abort signal, to which fetch adds a listener per request, removed by a
 * FinalizationRegistry only once the request is found dead, and every response is registered in
 * another; objects reachable from either survive the young generation, so each call's request,
 * response and body were promoted (the soak's old generation grew by about 18 KiB a call between
 * full collections, docs/performance.md "Soak"). `request` removes its abort listener when the
 * exchange ends and registers nothing, and costs less a request besides. Aborting the session
 * still ends what is in flight: a request waiting for its answer fails with the abort, an event
 * stream being read is destroyed.
 *
 * A JSON answer is read whole before it is handed on (the transport reads it whole next); an
 * event stream is handed on as it comes.
 *
 * Each upstream session's fetch (`fetchFor`) carries the organization's stored credential for the
 * server (docs/security.md "Upstream credentials"), read at every request so a rotation or a
 * revocation applies to open sessions at their next request, in place of any header of the same
 * name the servers file gives. A redirect is never followed nor handed on (docs/mcp.md "The
 * relay"): the SDK's transport would follow one within the origin, sending the credential where
 * the server points; it fails as an upstream error instead.
 */
export class McpUpstreamHttp {
  private readonly agent = new Agent({ keepAliveTimeout: 30_000 });

  /** The fetch of a server no credential is stored for. */
  readonly fetch: FetchLike = (url, init) => this.send(url, init, undefined);

  /** The fetch of one upstream session: `credential()` is the credential in force for its organization and server, if any. */
  fetchFor(server: string, credential: () => InjectedCredential | undefined): FetchLike {
    return (url, init) => this.send(url, init, server, credential());
  }

  private async send(url: string | URL, init: RequestInit | undefined, server: string | undefined, credential?: InjectedCredential): Promise<Response> {
    const target = credential?.placement.type === 'query' ? withQueryCredential(url, credential.placement.name, credential.value) : url;
    const { statusCode, headers, body } = await this.agent.request({
      origin: new URL(target).origin,
      path: pathOf(target),
      method: (init?.method ?? 'GET') as Dispatcher.HttpMethod,
      headers: withCredential(headersOf(init?.headers), credential),
      body: init?.body as string | undefined,
      signal: init?.signal ?? undefined,
    });
    if (statusCode >= 300 && statusCode < 400) {
      // Its Location is not read: it may carry what the gateway added (a query credential).
      body.resume();
      throw new UpstreamRedirect(server, statusCode);
    }
    const answer = { status: statusCode, headers: responseHeadersOf(headers) };
    if (NULL_BODY_STATUSES.has(statusCode) || init?.method === 'HEAD') {
      body.resume();
      return new Response(null, answer);
    }
    if (answer.headers.get('content-type')?.includes('text/event-stream') === true) return new Response(Readable.toWeb(body) as ReadableStream<Uint8Array>, answer);
    return new Response(await body.arrayBuffer(), answer);
  };

  async close(): Promise<void> {
    await this.agent.close();
  }
}

/** An upstream MCP server answered a redirect, which the gateway neither follows nor relays. */
export class UpstreamRedirect extends Error {
  constructor(
    server: string | undefined,
    readonly status: number,
  ) {
    super(`${server === undefined ? 'The MCP server' : `MCP server ${server}`} answered HTTP ${status}, a redirect, which the gateway does not follow: give its endpoint itself in MCP_SERVERS`);
    this.name = 'UpstreamRedirect';
  }
}

/** The headers with the credential's in place of any of the same name (a bearer credential is Authorization). */
function withCredential(headers: Record<string, string>, credential: InjectedCredential | undefined): Record<string, string> {
  if (credential === undefined || credential.placement.type === 'query') return headers;
  const name = credential.placement.type === 'bearer' ? 'authorization' : credential.placement.name.toLowerCase();
  // headersOf gives lower-case names (Headers does): the assignment replaces any of the same name.
  headers[name] = credential.placement.type === 'bearer' ? `Bearer ${credential.value}` : credential.value;
  return headers;
}

/** The URL with the credential as its only parameter of that name. */
function withQueryCredential(url: string | URL, name: string, value: string): URL {
  const target = new URL(url);
  target.searchParams.delete(name);
  target.searchParams.append(name, value);
  return target;
}

function pathOf(url: string | URL): string {
  const parsed = typeof url === 'string' ? new URL(url) : url;
  return parsed.pathname + parsed.search;
}

function headersOf(headers: RequestInit['headers']): Record<string, string> {
  const record: Record<string, string> = {};
  if (headers === undefined) return record;
  new Headers(headers).forEach((value, name) => (record[name] = value));
  return record;
}

function responseHeadersOf(headers: Record<string, string | string[] | undefined>): Headers {
  const result = new Headers();
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const one of value) result.append(name, one);
    else result.append(name, value);
  }
  return result;
}
